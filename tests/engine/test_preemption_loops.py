"""Preemption loops: a workload evicted again and again soon after each start is held
pending for an hour with a reason naming the figures, in pools that hold loops."""

from __future__ import annotations

import pytest

from scheduler_core.engine import Allocate, Evict, PoolConfig, apply_result, run_cycle
from scheduler_core.engine.decisions import CycleResult
from scheduler_core.engine.preemption_loops import (
    PREEMPTION_LOOP_SPAN,
    loop_detected,
    quick_evictions_after,
)
from tests.engine.factories import dept, node, project, snapshot, workload

NOW = 100_000.0
NODES = [node("n1", 8)]
QUEUES = [dept("org", 8), project("p", gpus=8)]
HOLDS = [PoolConfig(name="default", preemption_loop_evictions=3)]
KAI = [PoolConfig(name="default")]


def _looping(quick: int, evicted_ago: float) -> list:  # type: ignore[type-arg]
    return [
        workload(
            "loopy",
            gpus=4,
            quick_evictions=quick,
            preemptions=quick,
            pending_since=NOW - evicted_ago,
        )
    ]


def _started(result: CycleResult) -> set[str]:
    return {d.workload for d in result.decisions if isinstance(d, Allocate)}


def test_a_workload_evicted_three_times_soon_after_each_start_is_held_with_the_figures() -> None:
    result = run_cycle(snapshot(NODES, QUEUES, _looping(3, 600), HOLDS, now=NOW))
    assert _started(result) == set()
    info = result.pending["loopy"]
    assert info.reason_kind == "preemption_loop"
    assert info.reason.startswith(
        "held in a preemption loop: evicted 3 times in a row, each within 60 min of "
        "starting (3 evictions in all); pool default holds it until"
    )


@pytest.mark.parametrize(
    ("pools", "quick", "evicted_ago"),
    [
        (HOLDS, 3, PREEMPTION_LOOP_SPAN + 1),  # the hour is over
        (HOLDS, 2, 600),  # not (yet) a loop
        (KAI, 3, 600),  # KAI holds nothing
    ],
)
def test_it_starts_once_the_hour_is_over_before_a_loop_and_in_pools_that_hold_none(
    pools: list[PoolConfig], quick: int, evicted_ago: float
) -> None:
    result = run_cycle(snapshot(NODES, QUEUES, _looping(quick, evicted_ago), pools, now=NOW))
    assert _started(result) == {"loopy"}


@pytest.mark.parametrize(
    ("quick", "ran", "after", "event"),
    [
        (0, 600.0, 1, False),
        (2, 600.0, 3, True),  # the third in a row: reported once
        (3, 600.0, 4, False),
        (2, PREEMPTION_LOOP_SPAN, 0, False),  # a long run breaks the streak
        (2, None, 0, False),
    ],
)
def test_quick_evictions_count_runs_shorter_than_an_hour_in_a_row(
    quick: int, ran: float | None, after: int, event: bool
) -> None:
    assert quick_evictions_after(quick, ran) == after
    assert (loop_detected(quick, ran) is not None) is event


def test_the_simulation_counts_an_eviction_after_a_short_run_as_quick() -> None:
    run = workload("run", gpus=4, running_on=["n1"], started_at=NOW - 300, quick_evictions=1)
    snap = snapshot(NODES, QUEUES, [run], HOLDS, now=NOW)
    evict = Evict(workload="run", reason="reclaimed", reason_kind="reclaim")
    after = apply_result(snap, CycleResult(now=NOW, decisions=(evict,)))
    (spec,) = after.workloads
    assert (spec.quick_evictions, spec.preemptions, spec.pending_since) == (2, 1, NOW)
