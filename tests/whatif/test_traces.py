"""Reading a trace in the Philly columns and the cluster it replays on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from scheduler_core.whatif.traces import (
    TraceCluster,
    TraceJob,
    fits,
    parse_time,
    pod_shape,
    read_team_nodes,
    read_trace,
    team_quotas,
    trace_scenario,
)

START = datetime(2017, 10, 25, 19, 0, tzinfo=UTC)
TRACE = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-25 18:59:59,100.0,1,100.0,early
2017-10-25 19:05:00,90000.0,8,0,long
2017-10-25 19:00:30,60.0,2,120.0,b
2017-10-25 19:00:00,30.0,1,30.0,a
2017-10-25 19:10:00,0.0,1,0.0,idle
2017-10-25 19:20:00,10.0,0,0.0,cpu
2017-10-25 21:00:00,10.0,1,10.0,late
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    return path


def test_the_window_s_jobs_come_in_submission_order_with_durations_capped(trace: Path) -> None:
    jobs = read_trace(trace, start=START, hours=2, cap_hours=24)
    assert jobs == [
        TraceJob("j00000-a", "a", 0.0, 30.0, 1),
        TraceJob("j00001-b", "b", 30.0, 60.0, 2),
        TraceJob("j00002-long", "long", 300.0, 86400.0, 8),
    ]


def test_without_a_cap_a_job_runs_as_long_as_the_trace_says(trace: Path) -> None:
    jobs = read_trace(trace, start=START, hours=3)
    assert [(j.team, j.duration) for j in jobs] == [
        ("a", 30.0),
        ("b", 60.0),
        ("long", 90000.0),
        ("late", 10.0),
    ]


def test_times_are_read_as_utc_in_the_usual_spellings() -> None:
    assert parse_time("2017-10-25T19:00") == START
    assert parse_time("2017-10-25 19:00:00") == START
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday")


def test_quotas_follow_team_nodes_scaled_to_the_cluster(tmp_path: Path) -> None:
    vc = tmp_path / "vc.csv"
    vc.write_text("vc,node num\na,64\nb,32\nunused,100\n")
    quotas = team_quotas(["a", "b", "a", "new"], 48, read_team_nodes(vc))
    assert quotas == {"a": 32.0, "b": 16.0, "new": 0.0}


def test_without_team_sizes_teams_share_equally() -> None:
    assert team_quotas(["a", "b", "c"], 48) == {"a": 16.0, "b": 16.0, "c": 16.0}


@pytest.mark.parametrize(
    ("gpus", "shape"), [(1, (1, 1)), (4, (1, 4)), (8, (1, 8)), (16, (2, 8)), (12, (2, 6))]
)
def test_large_jobs_are_gangs_of_as_few_equal_pods_as_fit_a_node(gpus, shape) -> None:
    assert pod_shape(gpus, 8) == shape


def test_a_job_larger_than_the_cluster_does_not_fit() -> None:
    cluster = TraceCluster(2, 8, {"a": 16.0})
    assert fits(TraceJob("x", "a", 0, 1, 16), cluster)
    assert not fits(TraceJob("x", "a", 0, 1, 24), cluster)


def test_the_scenario_submits_each_job_at_the_first_step_after_it_arrives() -> None:
    jobs = [TraceJob("x", "a", 0.0, 30.0, 1), TraceJob("y", "b", 61.0, 60.0, 16)]
    scenario = trace_scenario("t", jobs, TraceCluster(2, 8, {"a": 8.0, "b": 8.0}), 60)
    assert [(s.at, [e.target for e in s.events]) for s in scenario.steps] == [
        (0, ["x"]),
        (60, []),
        (120, ["y"]),
    ]
    gang = scenario.steps[2].events[0]
    assert gang.duration == 60.0
    assert gang.workload is not None
    assert [(g.pods, g.min_pods, g.request.gpus) for g in gang.workload.groups] == [(2, 2, 8)]
    quotas = {q.name: q.quota["default"].gpus for q in scenario.queues}
    assert quotas == {"teams": 16.0, "a": 8.0, "b": 8.0}
