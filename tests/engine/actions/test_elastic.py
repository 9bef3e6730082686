"""Elastic allocation: minimums first, then one pod at a time to the workload with the
fewest pods above its minimum; a workload left below its pods says why."""

from __future__ import annotations

import pytest

from scheduler_core.engine import PoolConfig, WorkloadSpec, run_cycle
from tests.engine.factories import dept, node, project, settle, snapshot, workload

QUEUES = [dept("org", 8), project("p", gpus=8)]
# expand alone: without preemption a higher-priority workload below its pods does not
# take pods from a lower-priority one (see test_reclaim_rules for that)
NO_PREEMPTION = [PoolConfig(name="default", preemption=False)]


def _pods(final) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {w.id: len(w.pods) for w in final.workloads if w.pods}


@pytest.mark.parametrize(
    ("gpus", "workloads", "expected"),
    [
        # two alike: 3 + 2, not the older one first (4 + 1)
        (
            5,
            [workload("old", pods=4, min_pods=1), workload("new", pods=4, min_pods=1)],
            {"old": 3, "new": 2},
        ),
        # minimums first (2 + 1), then extras one at a time: 2 extra each
        (
            7,
            [workload("two", pods=6, min_pods=2), workload("one", pods=6, min_pods=1)],
            {"two": 4, "one": 3},
        ),
        # equal extras: the higher priority first, then the older one
        (
            5,
            [
                workload("low", pods=4, min_pods=1, priority=50),
                workload("high", pods=4, min_pods=1, priority=80),
            ],
            {"low": 2, "high": 3},
        ),
        # a workload that already runs extra pods gets none until the newcomer catches up
        (
            6,
            [
                workload("runs", pods=6, min_pods=1, running_on=["n1"] * 4),
                workload("joins", pods=4, min_pods=1),
            ],
            {"runs": 4, "joins": 2},
        ),
        # a workload that wants no more stops taking pods; the other gets the rest
        (
            8,
            [workload("short", pods=2, min_pods=1), workload("long", pods=8, min_pods=1)],
            {"short": 2, "long": 6},
        ),
    ],
)
def test_extra_pods_go_to_the_workload_with_the_fewest_above_its_minimum(
    gpus: int, workloads: list[WorkloadSpec], expected: dict[str, int]
) -> None:
    final, _ = settle(snapshot([node("n1", gpus)], QUEUES, workloads, pools=NO_PREEMPTION))
    assert _pods(final) == expected


def test_across_queues_the_queue_order_comes_first() -> None:
    # equal quotas: the extra pods alternate between the projects, 3 + 3
    queues = [dept("org", 6), project("a", gpus=3), project("b", gpus=3)]
    work = [
        workload("a1", project="a", pods=6, min_pods=1),
        workload("b1", project="b", pods=6, min_pods=1),
    ]
    final, _ = settle(snapshot([node("n1", 6)], queues, work))
    assert _pods(final) == {"a1": 3, "b1": 3}


def test_no_free_capacity_is_the_reason_when_the_pool_is_full() -> None:
    snap = snapshot(
        [node("n1", 2)], QUEUES, [workload("e", pods=4, min_pods=1)], pools=NO_PREEMPTION
    )
    final, results = settle(snap)
    assert _pods(final) == {"e": 2}
    assert results[-1].not_growing["e"] == (
        "capacity",
        "runs 2 of its 4 pods and does not grow: workload needs 1 GPUs on one pool; "
        "pool default has 0 free",
    )
    assert "e" not in results[-1].pending


def test_a_workload_shrunk_for_more_important_work_says_so() -> None:
    snap = snapshot(
        [node("n1", 4)],
        QUEUES,
        [
            workload("e", pods=4, min_pods=1, running_on=["n1"] * 4),
            workload("urgent", priority=80, gpus=2),
        ],
        pools=[PoolConfig(name="default", consolidation=False)],
    )
    _, text = run_cycle(snap).not_growing["e"]
    assert text.startswith("runs 2 of its 4 pods and does not grow: it gave up pods this cycle (")
