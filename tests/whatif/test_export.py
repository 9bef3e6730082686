"""The live cluster as a scenario: what the copy of a what-if run holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler_core.choices import NodeState
from scheduler_core.models import WorkloadCandidatePool
from scheduler_core.whatif.export import scenario_from_live_cluster
from scheduler_core.whatif.scenarios import ScenarioError, parse_scenario
from tests import factories

pytestmark = pytest.mark.django_db


def by_name(items: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in items}


def test_the_copy_is_a_valid_scenario_of_the_whole_cluster(busy_cluster):
    pool = busy_cluster["pool"]
    pool.policy, pool.min_guaranteed_runtime = "fairshare", 300
    pool.save()
    busy_cluster["vision"].quotas.update(limit_gpus=12)
    scenario = scenario_from_live_cluster()
    loaded = parse_scenario(scenario, "copy")
    assert {n.name for n in loaded.nodes} == {"gpu-1", "gpu-2"}
    assert len(loaded.workloads) == 11
    pools = by_name(scenario["pools"])
    assert pools["a100"]["policy"] == "fairshare"
    assert pools["a100"]["min_guaranteed_runtime"] == 300
    projects = by_name(scenario["projects"])
    assert projects["vision"]["quota"] == {"a100": {"gpus": 8}}
    assert projects["vision"]["limit"] == {"a100": {"gpus": 12}}
    assert projects["nlp"]["department"] == "research"
    assert by_name(scenario["departments"])["research"]["quota"] == {"a100": {"gpus": 12}}
    workloads = by_name(scenario["workloads"])
    assert workloads["vision/train-0"]["running_on"] == ["gpu-1"]
    assert "running_on" not in workloads["nlp/tune-0"]


def test_running_work_keeps_its_start_and_what_it_has_left_to_run(cluster):
    now = timezone.now()
    job = factories.running_workload(
        cluster["vision"], [cluster["nodes"][0]], name="long", spec={"duration": 3600}
    )
    job.started_at = now - timedelta(seconds=600)
    job.progress_seconds = 1200  # saved by a checkpoint before it was last preempted
    job.save()
    factories.workload(cluster["nlp"], "queued", spec={"duration": 100})
    workloads = by_name(scenario_from_live_cluster(now=now)["workloads"])
    long = workloads["vision/long"]
    assert long["started_at"] == -600
    # completes at started_at + duration = 3600 - 1200 - 600 = 1800 s from now
    assert long["started_at"] + long["duration"] == 1800
    assert workloads["nlp/queued"]["duration"] == 100


def test_overdue_work_still_has_a_second_to_go(cluster):
    now = timezone.now()
    job = factories.running_workload(
        cluster["vision"], [cluster["nodes"][0]], name="late", spec={"duration": 60}
    )
    job.started_at = now - timedelta(seconds=90)
    job.save()
    late = by_name(scenario_from_live_cluster(now=now)["workloads"])["vision/late"]
    assert late["started_at"] + late["duration"] == 1


def test_node_states_gangs_and_pool_choices_are_kept(cluster):
    gpu1 = cluster["nodes"][0]
    gpu1.state = NodeState.CORDONED
    gpu1.save()
    factories.node(cluster["pool"], "gpu-3", state=NodeState.DOWN, labels={"zone": "b"})
    gang = factories.workload(
        cluster["vision"],
        "dist",
        groups=[
            {"name": "coordinator", "pods": 1, "min_pods": 1, "gpus": 0, "cpu": 4},
            {"name": "worker", "pods": 4, "min_pods": 2, "gpus": 1},
        ],
        node_selector={"zone": "b"},
    )
    WorkloadCandidatePool.objects.create(workload=gang, pool=cluster["pool"])
    scenario = scenario_from_live_cluster()
    parse_scenario(scenario, "copy")
    nodes = by_name(scenario["nodes"])
    assert nodes["gpu-1"]["state"] == "cordoned"
    assert nodes["gpu-3"]["state"] == "down"
    assert "state" not in nodes["gpu-2"]
    dist = by_name(scenario["workloads"])["vision/dist"]
    assert [g["name"] for g in dist["groups"]] == ["coordinator", "worker"]
    assert dist["pools"] == ["a100"]
    assert dist["node_selector"] == {"zone": "b"}


def test_a_department_named_like_a_project_still_makes_a_valid_copy(cluster):
    factories.project(cluster["dept"], "ops")  # the department "ops" exists too
    scenario = scenario_from_live_cluster()
    parse_scenario(scenario, "copy")
    assert "ops-department" in by_name(scenario["departments"])
    assert by_name(scenario["projects"])["infra"]["department"] == "ops-department"
    assert by_name(scenario["projects"])["ops"]["department"] == "research"


def test_the_copy_takes_the_same_number_of_queries_for_any_cluster_size(cluster):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            scenario_from_live_cluster()
        return len(queries)

    factories.running_workload(cluster["vision"], [cluster["nodes"][0]], name="first")
    small = count()
    for i in range(5):
        w = factories.running_workload(cluster["nlp"], [cluster["nodes"][i % 2]], name=f"r{i}")
        WorkloadCandidatePool.objects.create(workload=w, pool=cluster["pool"])
        factories.project(cluster["dept"], f"extra-{i}")
    assert count() == small


def test_waiting_work_keeps_its_wait_and_every_workload_its_preemptions(cluster):
    # "queued" went back to the queue an hour ago (preempted twice); its wait for room
    # counts from 30 min ago. A pool that weighs lost work or bounds preemptions decides
    # on the copy as it would on the live cluster
    now = timezone.now()
    factories.workload(
        cluster["nlp"],
        "queued",
        submitted_at=now - timedelta(hours=2),
        pending_since=now - timedelta(hours=1),
        room_wait_since=now - timedelta(minutes=30),
        preemptions=2,
    )
    factories.workload(cluster["nlp"], "fresh", submitted_at=now - timedelta(seconds=90))
    running = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], name="run")
    running.preemptions = 1
    running.save()
    scenario = scenario_from_live_cluster(now=now)
    workloads = by_name(scenario["workloads"])
    queued = workloads["nlp/queued"]
    assert (queued["pending_since"], queued["room_wait_since"]) == (-3600, -1800)
    assert queued["preemptions"] == 2
    assert workloads["nlp/fresh"]["pending_since"] == -90
    assert "preemptions" not in workloads["nlp/fresh"]
    assert workloads["vision/run"]["preemptions"] == 1
    assert "pending_since" not in workloads["vision/run"]
    specs = {w.id: w for w in parse_scenario(scenario, "copy").workloads}
    assert specs["nlp/queued"].pending_since == -3600
    assert specs["nlp/queued"].room_wait_since == -1800
    assert (specs["nlp/queued"].preemptions, specs["vision/run"].preemptions) == (2, 1)


def test_work_its_queue_holds_now_has_not_begun_to_wait_for_room(cluster):
    # "held" waits for its project's fair share: were its turn to come at the copy's
    # first cycle, its wait for room would count from then (0), as live notes it, not
    # from its submission two hours ago
    now = timezone.now()
    for name, kind in (("held", "fairshare"), ("roomless", "capacity")):
        factories.workload(
            cluster["nlp"], name, submitted_at=now - timedelta(hours=2), pending_reason_kind=kind
        )
    workloads = by_name(scenario_from_live_cluster(now=now)["workloads"])
    assert workloads["nlp/held"]["pending_since"] == -7200
    assert workloads["nlp/held"]["room_wait_since"] == 0
    assert "room_wait_since" not in workloads["nlp/roomless"]


def test_a_scenario_says_when_a_running_workload_is_given_a_wait():
    scenario = {
        "name": "bad",
        "nodes": [{"name": "n1", "gpus": 8}],
        "departments": [{"name": "d"}],
        "projects": [{"name": "p", "department": "d"}],
        "workloads": [
            {"name": "w", "project": "p", "gpus": 1, "running_on": ["n1"], "pending_since": -60}
        ],
    }
    said = r"'pending_since' is for a pending workload, not one with 'running_on'"
    with pytest.raises(ScenarioError, match=said):
        parse_scenario(scenario, "bad")
