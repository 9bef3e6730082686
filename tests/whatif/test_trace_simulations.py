"""A job trace replayed as a what-if run: the options checked field by field, and the run
in a worker with the engine, FIFO and FIFO with backfill side by side."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from scheduler_core.choices import SimulationSource, SimulationStatus
from scheduler_core.services.simulations import simulation_create
from scheduler_core.whatif.tasks import run_simulation_task
from scheduler_core.whatif.trace_runs import check_trace_request
from tests.factories import TRACE_CSV as TRACE
from tests.factories import TRACE_OPTIONS as OPTIONS

pytestmark = pytest.mark.django_db


def create(user, **changes):
    fields = {"trace_text": TRACE, "trace": OPTIONS} | changes
    return simulation_create(user=user, name="a day", source="trace", **fields)


def problems(error: ValidationError) -> dict[str, list[str]]:
    return error.message_dict


def test_a_trace_run_compares_the_engine_with_fifo_and_backfill(cluster):
    sim = create(cluster["admin"], trace={**OPTIONS, "config": {"profile": "kai"}})
    assert sim.source == SimulationSource.TRACE
    assert sim.trace_options["start"] == "2017-10-25T19:00"
    run_simulation_task.apply(args=[sim.pk])
    sim.refresh_from_db()
    assert sim.status == SimulationStatus.SUCCEEDED, sim.error
    result = sim.result
    assert result["kind"] == "trace"
    assert result["jobs"] == 6  # the job at 23:00 is outside the two hours
    assert set(result["runs"]) == {"fairway", "fifo", "fifo+backfill"}
    fairway = result["runs"]["fairway"]
    assert fairway["completed"] == 6
    # KAI's quota scheduler reclaims for b's gang; FIFO makes it wait for a's jobs
    assert fairway["preemptions"] >= 1 and result["runs"]["fifo"]["preemptions"] == 0
    timeline = fairway["timeline"]
    assert timeline["hours"][:3] == [0.0, 1.0, 2.0]
    assert timeline["gpus_in_use"][0] == 32  # the four 8-GPU jobs fill the cluster at once
    assert "6 jobs on 4 nodes x 8 GPUs" in result["header"]


def test_bad_options_are_named_field_by_field(cluster):
    with pytest.raises(ValidationError) as caught:
        create(
            cluster["admin"],
            trace={"start": "yesterday", "hours": 0, "nodes": 4, "load": 1.2, "colour": 1},
        )
    found = problems(caught.value)
    assert found["trace.load"] == ["give the nodes or the offered load, not both"]
    assert "not a time" in found["trace.start"][0]
    assert found["trace.hours"] == ["must be more than 0 and at most 168, got 0"]
    assert found["trace.colour"] == ["not an option of a trace run"]
    with pytest.raises(ValidationError) as caught:
        create(cluster["admin"], trace={**OPTIONS, "nodes": None})
    assert "give the cluster's nodes" in problems(caught.value)["trace.nodes"][0]


def test_a_trace_without_the_columns_or_jobs_in_the_window_is_refused(cluster):
    with pytest.raises(ValidationError) as caught:
        create(cluster["admin"], trace_text="when,gpus\n1,2\n")
    assert (
        "no column timestamp, duration, num_gpus, cluster"
        in (problems(caught.value)["trace_text"][0])
    )
    with pytest.raises(ValidationError) as caught:
        create(cluster["admin"], trace={**OPTIONS, "start": "2018-01-01T00:00"})
    assert problems(caught.value)["trace.start"] == [
        "no job of the trace is submitted in the 2 hours from 2018-01-01 00:00"
    ]
    bad_row = TRACE + "2017-10-25 19:30:00,soon,1,0,a\n"
    with pytest.raises(ValidationError) as caught:
        create(cluster["admin"], trace_text=bad_row)
    assert problems(caught.value)["trace_text"] == ["line 9 of the trace: not a number: 'soon'"]


def test_pool_settings_are_checked_as_a_scenario_checks_them(cluster):
    with pytest.raises(ValidationError) as caught:
        create(cluster["admin"], trace={**OPTIONS, "config": {"reserve_for_gang": True}})
    assert problems(caught.value)["trace.config"] == ["unknown key 'reserve_for_gang'"]
    sim = create(cluster["admin"], trace={**OPTIONS, "config": {"reserve_for_gangs": True}})
    assert sim.trace_options["config"] == {"profile": "lab", "reserve_for_gangs": True}
    sim = create(cluster["admin"])  # the lab profile unless told otherwise
    assert sim.trace_options["config"] == {"profile": "lab"}


def test_a_trace_run_takes_no_changes_or_scenario(cluster):
    with pytest.raises(ValidationError) as caught:
        create(cluster["admin"], changes={"remove_nodes": ["gpu-1"]}, scenario_text="name: x")
    found = problems(caught.value)
    assert set(found) == {"changes", "scenario_text"}


def test_researchers_cannot_replay_a_trace(cluster):
    with pytest.raises(PermissionDenied):
        create(cluster["researcher"])


def test_the_window_and_cluster_size_are_bounded():
    request, found = check_trace_request(TRACE, {**OPTIONS, "nodes": 10_000})
    assert request is None
    assert found == [("nodes", "must be at least 1 and at most 512, got 10000")]
