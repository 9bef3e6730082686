"""FIFO and FIFO with backfill on cases small enough to check by hand (one node of 8 GPUs,
a decision every 60 s)."""

from __future__ import annotations

import pytest

from scheduler_core.whatif.reference import ReferenceScheduler, place
from scheduler_core.whatif.run_figures import RunFigures, RunTally
from scheduler_core.whatif.traces import TraceCluster, TraceJob

ONE_NODE = TraceCluster(1, 8, {"t": 8.0})


def replay(jobs: list[TraceJob], *, backfill: bool, cluster: TraceCluster = ONE_NODE) -> RunFigures:
    tally = RunTally(capacity_gpus=cluster.gpus, shares=cluster.quotas)
    ReferenceScheduler(cluster, tally, backfill, 60.0).replay(jobs)
    return tally.figures()


def jobs(*shapes: tuple[int, float]) -> list[TraceJob]:
    """Jobs all submitted at 0, in this order: (GPUs, seconds)."""
    return [TraceJob(f"j{i}", "t", 0.0, seconds, gpus) for i, (gpus, seconds) in enumerate(shapes)]


def test_fifo_stops_at_the_first_job_that_does_not_fit() -> None:
    # 6 GPUs run 0-600; 4 GPUs wait for them (600-1200), and so does the 2-GPU job behind
    figures = replay(jobs((6, 600), (4, 600), (2, 300)), backfill=False)
    assert figures.makespan_hours * 3600 == 1200
    assert figures.mean_queueing_minutes == {"1": None, "2-8": 400 / 60, ">8": None}


def test_backfill_starts_a_later_job_that_ends_before_the_first_can_start() -> None:
    # the 2-GPU job fits beside the 6 and ends at 300, before the 4-GPU job could start
    figures = replay(jobs((6, 600), (4, 600), (2, 300)), backfill=True)
    assert figures.makespan_hours * 3600 == 1200
    assert figures.mean_queueing_minutes["2-8"] == 200 / 60


def test_backfill_never_delays_the_first_waiting_job() -> None:
    # a 2-GPU hour-long job would still hold 2 GPUs at 600, when the 8-GPU job is due
    figures = replay(jobs((6, 600), (8, 600), (2, 3600)), backfill=True)
    assert figures.makespan_hours * 3600 == 1200 + 3600
    assert figures.mean_queueing_minutes["2-8"] == (0 + 600 + 1200) / 3 / 60


def test_backfill_may_run_long_when_it_leaves_room_for_the_first_waiting_job() -> None:
    figures = replay(jobs((6, 600), (4, 600), (2, 3600)), backfill=True)
    assert figures.makespan_hours * 3600 == 3600
    assert figures.mean_queueing_minutes["2-8"] == (0 + 600 + 0) / 3 / 60


def test_a_job_waits_for_the_next_decision_and_completes_at_its_own_time() -> None:
    late = [TraceJob("a", "t", 10.0, 25.0, 1)]
    figures = replay(late, backfill=False)
    assert figures.mean_queueing_minutes["1"] == 50 / 60
    assert figures.makespan_hours * 3600 == pytest.approx(85)
    assert figures.mean_completion_hours * 3600 == pytest.approx(75)


def test_a_gang_needs_a_whole_node_per_pod() -> None:
    cluster = TraceCluster(2, 8, {"t": 16.0})
    # one GPU busy on each node until 600: the 16-GPU gang waits for both
    busy = [TraceJob("x", "t", 0.0, 600.0, 1), TraceJob("y", "t", 0.0, 300.0, 8)]
    gang = [TraceJob("g", "t", 0.0, 100.0, 16)]
    figures = replay(busy + gang, backfill=False, cluster=cluster)
    assert figures.mean_queueing_minutes[">8"] == 10.0
    assert figures.utilisation == pytest.approx((600 + 8 * 300 + 16 * 100) / (16 * 700))


def test_placement_fills_the_fullest_node_that_fits() -> None:
    assert place([8, 3, 5], 1, 2) == [1]
    assert place([8, 3, 5], 2, 4) == [2, 0]
    assert place([3, 3], 1, 4) is None
