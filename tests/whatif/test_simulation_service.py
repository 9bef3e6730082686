"""What-if runs as an admin sees them: create, run in a worker, progress, results, errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from scheduler_core.choices import SimulationSource, SimulationStatus
from scheduler_core.models import Simulation
from scheduler_core.selectors.simulations import simulation_result_for, simulations_visible_to
from scheduler_core.services import simulations as service
from scheduler_core.services.simulations import (
    simulation_create,
    simulation_fail_stale,
    simulation_preview,
    simulation_run,
)
from scheduler_core.whatif.tasks import run_simulation_task

pytestmark = pytest.mark.django_db

SCENARIO = """
name: two-teams
pools: [{name: default}]
nodes: [{name: n, count: 2, pool: default, gpus: 8}]
departments: [{name: research, quota: {default: {gpus: 16}}}]
projects:
  - {name: vision, department: research, quota: {default: {gpus: 8}}}
  - {name: nlp, department: research, quota: {default: {gpus: 8}}}
workloads:
  - {name: big, project: vision, pods: 2, gpus: 8, duration: 600}
steps:
  - at: 0
    expect: {running: [big]}
  - at: 300
    events:
      - submit: {name: small, project: nlp, gpus: 4, duration: 300}
"""
QUOTA_CUT = {"quotas": [{"project": "vision", "pool": "a100", "gpus": 4}]}


def run_now(simulation: Simulation) -> Simulation:
    """What the worker does with the queued run."""
    run_simulation_task.apply(args=[simulation.pk])
    simulation.refresh_from_db()
    return simulation


def test_a_scenario_run_stores_per_project_results(cluster):
    sim = simulation_create(
        user=cluster["admin"], name="two teams", source="scenario", scenario_text=SCENARIO
    )
    assert sim.status == SimulationStatus.QUEUED
    sim = run_now(sim)
    assert sim.status == SimulationStatus.SUCCEEDED, sim.error
    assert sim.progress == 1
    assert sim.finished_at is not None
    baseline = sim.result["runs"]["baseline"]
    assert set(baseline["projects"]) == {"vision", "nlp"}
    assert baseline["projects"]["vision"]["peak_gpus"] == 16
    assert baseline["projects"]["vision"]["completed"] == 1
    assert baseline["expectations"] == {"checked": 1, "failed": []}
    assert baseline["end"] >= 3600  # empty steps reach the horizon after the scenario's last
    assert "comparison" not in sim.result


def test_a_live_copy_with_a_smaller_quota_shows_who_gets_reclaimed(busy_cluster):
    sim = simulation_create(
        user=busy_cluster["admin"], name="cut vision", source="live", changes=QUOTA_CUT
    )
    sim = run_now(sim)
    assert sim.status == SimulationStatus.SUCCEEDED, sim.error
    comparison = sim.result["comparison"]
    assert [r["project"] for r in comparison["reclaimed"]] == ["vision"]
    assert [g["project"] for g in comparison["gains"]] == ["nlp"]
    vision = comparison["projects"]["vision"]
    assert vision["mean_gpus"]["changed"] < vision["mean_gpus"]["baseline"]
    assert "reclaimed" in comparison["reclaimed"][0]["text"]
    assert sim.result["changes_text"] == ["vision in a100: gpus 8 -> 4"]
    # the copy itself is kept with the run: a scenario anyone can replay
    assert '"vision/train-0"' in sim.scenario_text


def test_progress_is_stored_and_pushed_to_the_simulation_group(
    busy_cluster, django_capture_on_commit_callbacks
):
    sim = simulation_create(
        user=busy_cluster["admin"], name="watched", source="live", changes=QUOTA_CUT
    )
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(f"simulation-{sim.pk}", channel)
    # a worker runs outside any transaction: each push goes out at once
    with django_capture_on_commit_callbacks(execute=True):
        run_now(sim)

    async def drain() -> list[dict]:
        import asyncio

        messages = []
        while True:
            try:
                messages.append(await asyncio.wait_for(layer.receive(channel), 0.5))
            except TimeoutError:
                return messages

    messages = async_to_sync(drain)()
    assert all(m["type"] == "simulation.progress" for m in messages)
    progress = [m["simulation"]["progress"] for m in messages]
    assert len(progress) >= 4
    assert progress == sorted(progress)
    assert messages[0]["simulation"]["status"] == SimulationStatus.RUNNING
    assert messages[-1]["simulation"]["status"] == SimulationStatus.SUCCEEDED
    assert progress[-1] == 1
    assert any("baseline run" in m["simulation"]["progress_message"] for m in messages)
    assert any("changed run" in m["simulation"]["progress_message"] for m in messages)


def test_the_run_is_queued_only_after_commit(
    cluster, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(
        run_simulation_task, "apply_async", lambda args, *a, **kw: queued.append(args[0])
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sim = simulation_create(user=cluster["admin"], name="later", source="live")
        assert queued == []
    for callback in callbacks:
        callback()
    assert queued == [sim.pk]


def test_a_broker_that_is_down_fails_the_run_with_a_reason(
    cluster, monkeypatch, django_capture_on_commit_callbacks
):
    def refuse(pk):
        raise ConnectionError("Redis refused the connection")

    monkeypatch.setattr(run_simulation_task, "apply_async", lambda args, *a, **kw: refuse(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        sim = simulation_create(user=cluster["admin"], name="no broker", source="live")
    sim.refresh_from_db()
    assert sim.status == SimulationStatus.FAILED
    assert "Redis refused" in sim.error


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (SCENARIO.replace("gpus: 4,", "gpus: two,"), "'gpus' must be a number"),
        ("pools: [default\nnodes: {", "scenario.yaml: line"),
        ("- just a list", "must be a mapping"),
        ("", "paste or upload a scenario"),
    ],
)
def test_a_malformed_scenario_names_the_field(cluster, text, words):
    with pytest.raises(ValidationError) as caught:
        simulation_create(user=cluster["admin"], name="bad", source="scenario", scenario_text=text)
    errors = caught.value.message_dict
    assert list(errors) == ["scenario_text"]
    assert words in errors["scenario_text"][0]
    assert Simulation.objects.count() == 0


def test_the_scenario_error_says_where(cluster):
    with pytest.raises(ValidationError) as caught:
        simulation_create(
            user=cluster["admin"],
            name="bad",
            source="scenario",
            scenario_text=SCENARIO.replace("pods: 2, gpus: 8", "pods: 2, gpus: eight"),
        )
    message = caught.value.message_dict["scenario_text"][0]
    assert message.startswith("scenario.yaml: workloads[0] (name 'big')")


def test_bad_changes_name_each_field(cluster):
    changes = {
        "quotas": [{"project": "visoin", "pool": "a100", "gpus": "x"}],
        "weights": [{"project": "nlp", "over_quota_weight": -1}],
        "pools": [{"pool": "a100", "policy": "lottery"}],
        "add_nodes": [{"name": "gpu-1", "pool": "a100", "gpus": 8}],
        "remove_nodes": ["gpu-9"],
        "budget": 3,
    }
    with pytest.raises(ValidationError) as caught:
        simulation_create(user=cluster["admin"], name="bad", source="live", changes=changes)
    errors = caught.value.message_dict
    assert errors["changes.quotas[0].project"] == ["no project named 'visoin'"]
    assert "must be a number" in errors["changes.quotas[0].gpus"][0]
    assert "0 or more" in errors["changes.weights[0].over_quota_weight"][0]
    assert "quota, fairshare, priority" in errors["changes.pools[0].policy"][0]
    assert "already exists" in errors["changes.add_nodes[0].name"][0]
    assert errors["changes.remove_nodes[0]"] == ["no node named 'gpu-9'"]
    assert "unknown change" in errors["changes.budget"][0]


def test_a_quota_above_its_current_limit_is_refused(cluster):
    cluster["vision"].quotas.update(limit_gpus=10)
    with pytest.raises(ValidationError) as caught:
        simulation_create(
            user=cluster["admin"],
            name="too big",
            source="live",
            changes={"quotas": [{"project": "vision", "pool": "a100", "gpus": 12}]},
        )
    assert "current limit (10)" in caught.value.message_dict["changes.quotas[0].gpus"][0]


@pytest.mark.parametrize(
    ("field", "value"), [("name", "  "), ("source", "dream"), ("horizon", 5), ("horizon", "1h")]
)
def test_basic_fields_are_checked(cluster, field, value):
    kwargs = {"name": "run", "source": "live", "horizon": 3600, field: value}
    with pytest.raises(ValidationError) as caught:
        simulation_create(user=cluster["admin"], **kwargs)
    assert field in caught.value.message_dict


@pytest.mark.parametrize("role", ["researcher", "viewer", "outsider"])
def test_only_admins_run_simulations(cluster, role):
    with pytest.raises(PermissionDenied):
        simulation_create(user=cluster[role], name="mine", source="live")


def test_department_admins_only_try_what_they_could_change(cluster):
    dept_admin = cluster["dept_admin"]
    sim = simulation_create(user=dept_admin, name="ok", source="live", changes=QUOTA_CUT)
    assert sim.created_by == dept_admin
    with pytest.raises(ValidationError) as caught:
        simulation_create(
            user=dept_admin,
            name="not mine",
            source="live",
            changes={
                "quotas": [{"project": "infra", "pool": "a100", "gpus": 0}],
                "add_nodes": [{"name": "new-1", "pool": "a100", "gpus": 8}],
            },
        )
    errors = caught.value.message_dict
    assert "departments you manage" in errors["changes.quotas[0].project"][0]
    assert "only system admins" in errors["changes.add_nodes"][0]


def test_a_run_too_big_to_simulate_is_refused_before_it_is_queued(cluster):
    """10,000 nodes and 5,000 workloads over some 60 steps would schedule for hours."""
    workloads = "".join(f"  - {{name: w{i}, project: p, gpus: 1}}\n" for i in range(5000))
    text = (
        "pools: [{name: a}]\nnodes: [{name: n, count: 10000, pool: a, gpus: 8}]\n"
        "departments: [{name: d}]\nprojects: [{name: p, department: d}]\n"
        f"workloads:\n{workloads}"
    )
    with pytest.raises(ValidationError) as caught:
        simulation_create(user=cluster["admin"], name="huge", source="scenario", scenario_text=text)
    assert "too big to simulate" in caught.value.message_dict["scenario_text"][0]
    assert not Simulation.objects.exists()


def test_runs_are_listed_to_their_creator_and_system_admins(cluster):
    mine = simulation_create(user=cluster["dept_admin"], name="mine", source="live")
    other_admin = simulation_create(user=cluster["admin"], name="admin's", source="live")
    assert list(simulations_visible_to(cluster["dept_admin"])) == [mine]
    assert list(simulations_visible_to(cluster["admin"])) == [other_admin, mine]
    assert list(simulations_visible_to(cluster["researcher"])) == []


def test_department_admins_see_other_departments_folded_together(busy_cluster):
    busy_cluster["infra"].workloads.create(name="ops-job", gpus=1, submitted_at=timezone.now())
    sim = run_now(
        simulation_create(
            user=busy_cluster["dept_admin"], name="cut", source="live", changes=QUOTA_CUT
        )
    )
    shown = simulation_result_for(simulation=sim, user=busy_cluster["dept_admin"])
    projects = shown["runs"]["baseline"]["projects"]
    assert "infra" not in projects
    assert "(other projects)" in projects
    assert "infra" not in shown["comparison"]["projects"]
    full = simulation_result_for(simulation=sim, user=busy_cluster["admin"])
    assert "infra" in full["runs"]["baseline"]["projects"]


def test_a_crash_mid_run_leaves_the_run_failed_with_the_error(cluster, monkeypatch):
    def explode(**kwargs):
        kwargs["on_progress"](0.3, "baseline run: 18:00 of 1:00:00 simulated")
        raise RuntimeError("the engine fell over")

    monkeypatch.setattr(service, "run_whatif", explode)
    sim = run_now(simulation_create(user=cluster["admin"], name="boom", source="live"))
    assert sim.status == SimulationStatus.FAILED
    assert "the engine fell over" in sim.error
    assert sim.progress_message == "failed"
    assert sim.finished_at is not None


def test_runs_that_stop_answering_are_marked_failed(cluster):
    sim = simulation_create(user=cluster["admin"], name="lost", source="live")
    Simulation.objects.filter(pk=sim.pk).update(
        status=SimulationStatus.RUNNING, started_at=timezone.now() - timedelta(hours=2)
    )
    fresh = simulation_create(user=cluster["admin"], name="fresh", source="live")
    Simulation.objects.filter(pk=fresh.pk).update(
        status=SimulationStatus.RUNNING, started_at=timezone.now()
    )
    assert simulation_fail_stale() == 0  # creating `fresh` already swept `lost`
    sim.refresh_from_db()
    fresh.refresh_from_db()
    assert sim.status == SimulationStatus.FAILED
    assert "stopped answering" in sim.error
    assert fresh.status == SimulationStatus.RUNNING


def test_runs_never_picked_up_are_marked_failed(cluster):
    sim = simulation_create(user=cluster["admin"], name="forgotten", source="live")
    later = timezone.now() + timedelta(days=1)
    assert simulation_fail_stale(now=later) == 1
    sim.refresh_from_db()
    assert sim.status == SimulationStatus.FAILED
    assert "worker" in sim.error


def test_a_finished_run_is_not_run_again(cluster):
    sim = run_now(simulation_create(user=cluster["admin"], name="once", source="live"))
    finished_at = sim.finished_at
    simulation_run(simulation_id=sim.pk)
    sim.refresh_from_db()
    assert sim.finished_at == finished_at


def test_a_preview_compares_without_storing_anything(busy_cluster):
    result = simulation_preview(user=busy_cluster["admin"], changes=QUOTA_CUT, horizon=600)
    assert [r["project"] for r in result["comparison"]["reclaimed"]] == ["vision"]
    assert result["runs"]["baseline"]["steps"] <= 25
    assert Simulation.objects.count() == 0


def test_a_scenario_can_be_tried_with_changes_too(cluster):
    sim = run_now(
        simulation_create(
            user=cluster["admin"],
            name="scenario what-if",
            source=SimulationSource.SCENARIO,
            scenario_text=SCENARIO,
            changes={"add_nodes": [{"name": "extra", "pool": "default", "gpus": 8}]},
            horizon=900,
        )
    )
    assert sim.status == SimulationStatus.SUCCEEDED, sim.error
    assert sim.result["changes_text"] == ["add extra to default (8 GPUs each)"]
    assert sim.result["comparison"]["cluster"]["mean_utilization"]["delta"] < 0
