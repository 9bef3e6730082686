"""The proportion plugin through whole cycles: queue order, over-quota weight 0 and
time-based fairshare. Cluster in, placements, fairshare figures and reasons out."""

from __future__ import annotations

import pytest

from scheduler_core.engine import PoolConfig, QueueSpec, UsageRecord, WorkloadSpec, run_cycle
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload

NO_EVICTIONS = [PoolConfig(name="default", preemption=False, consolidation=False)]


def _gpus(result, queue: str) -> float:  # type: ignore[no-untyped-def]
    return float(result.queues[queue]["default"].fairshare.gpus)


# ------------------------------------------------------------ queue order
# Two workloads wait for the last free GPUs, room for one of them; the one whose queue
# comes first in queue order runs. `first` is submitted first, so FIFO would pick it.
@pytest.mark.parametrize(
    ("queues", "first", "second", "free", "expected"),
    [
        # same state (in quota): 2 of 4 beats 2 of 2
        (
            [dept("org", 6), project("small", gpus=2), project("big", gpus=4)],
            workload("s", project="small", gpus=2),
            workload("b", project="big", gpus=2),
            2,
            "b",
        ),
        # over quota below fairshare: measured against the fairshare, 2 of 5 before
        # 2 of 3 (weights 3:2 of 8 GPUs; the wide gangs only raise what each asks)
        (
            [
                dept("org", 0),
                project("few", gpus=0, over_quota_weight=2),
                project("many", gpus=0, over_quota_weight=3),
            ],
            [workload("f", project="few", gpus=2), workload("f8", project="few", pods=8)],
            [workload("m", project="many", gpus=2), workload("m8", project="many", pods=8)],
            2,
            "m",
        ),
        # exact tie (1 of 2 each): the older queue, not the older workload
        (
            [dept("org", 4), project("old", gpus=2), project("young", gpus=2)],
            workload("y", project="young", gpus=1),
            workload("o", project="old", gpus=1),
            1,
            "o",
        ),
        # departments first: 2 of 4 in department big beats 2 of 2 in department small
        (
            [
                dept("small", 2),
                dept("big", 4),
                project("ps", department="small", gpus=2),
                project("pb", department="big", gpus=4),
            ],
            workload("s", project="ps", gpus=2),
            workload("b", project="pb", gpus=2),
            2,
            "b",
        ),
    ],
)
def test_queue_order_serves_the_smallest_share_of_what_a_queue_is_entitled_to(
    queues: list[QueueSpec],
    first: WorkloadSpec | list[WorkloadSpec],
    second: WorkloadSpec | list[WorkloadSpec],
    free: int,
    expected: str,
) -> None:
    # the rest of the pool is held in a queue of its own, at a lower rank
    waiting = [w for ws in (first, second) for w in (ws if isinstance(ws, list) else [ws])]
    snap = snapshot(
        [node("n1", 8)],
        [*queues, dept("rest", 0, rank=-1), project("filler", department="rest", rank=-1)],
        [workload("hog", project="filler", gpus=8 - free, running_on=["n1"]), *waiting],
        pools=NO_EVICTIONS,
    )
    final, _ = settle(snap)
    assert set(running(final)) == {"hog", expected}


def test_queue_order_counts_the_workload_being_placed() -> None:
    # both queues hold nothing; with the workload, 3 of 4 is more than 2 of 4
    snap = snapshot(
        [node("n1", 8)],
        [
            dept("org", 8),
            project("a", gpus=4),
            project("b", gpus=4),
            dept("rest", 0, rank=-1),
            project("filler", department="rest", rank=-1),
        ],
        [
            workload("hog", project="filler", gpus=5, running_on=["n1"]),
            workload("wide", project="a", gpus=3),
            workload("narrow", project="b", gpus=2),
        ],
        pools=NO_EVICTIONS,
    )
    final, _ = settle(snap)
    assert set(running(final)) == {"hog", "narrow"}


# ------------------------------------------------------------ over-quota weight 0
@pytest.mark.parametrize(
    ("weights", "quotas", "asks", "expected"),
    [
        # weight 0 beside weight 1: no over-quota share
        ({"a": 1, "z": 0}, {"a": 0, "z": 2}, {"a": 8, "z": 8}, {"a": 6, "z": 2}),
        # weight 0 alone with idle GPUs: still only its quota
        ({"a": 1, "z": 0}, {"a": 0, "z": 2}, {"a": 0, "z": 8}, {"a": 0, "z": 2}),
        # every queue weight 0: each keeps its quota, nothing more
        ({"a": 0, "z": 0}, {"a": 1, "z": 2}, {"a": 8, "z": 8}, {"a": 1, "z": 2}),
    ],
)
def test_weight_zero_fairshare(
    weights: dict[str, float],
    quotas: dict[str, float],
    asks: dict[str, int],
    expected: dict[str, float],
) -> None:
    queues = [dept("org", 0)] + [
        project(q, gpus=quotas[q], over_quota_weight=weights[q]) for q in sorted(weights)
    ]
    work = [workload(f"{q}-w", project=q, gpus=1, pods=n) for q, n in asks.items() if n]
    result = run_cycle(snapshot([node("n1", 8)], queues, work))
    assert {q: _gpus(result, q) for q in expected} == pytest.approx(expected)


def test_weight_zero_runs_on_idle_gpus_but_cannot_reclaim_and_says_why() -> None:
    queues = [
        dept("org", 0),
        project("a", gpus=0, over_quota_weight=1),
        project("z", gpus=0, over_quota_weight=0),
    ]
    # idle GPUs: z's workload runs although its fairshare is 0
    final, _ = settle(
        snapshot([node("n1", 8)], queues, [workload("idle-use", project="z", gpus=4)])
    )
    assert set(running(final)) == {"idle-use"}
    # the pool is full with a's work: z may not reclaim
    snap = snapshot(
        [node("n1", 8)],
        queues,
        [workload("full", project="a", gpus=8, running_on=["n1"]), workload("ask", project="z")],
    )
    final, results = settle(snap)
    assert set(running(final)) == {"full"}
    info = results[-1].pending["ask"]
    assert info.reason_kind == "fairshare"
    assert info.reason == (
        "workload needs 1 GPUs on one pool; pool default has 0 free; project z has "
        "over-quota weight 0, so it has no over-quota share: its fair share in pool default "
        "is 0 GPUs, no more than its deserved quota (holds 0, this needs 1); it can only use "
        "idle resources (0 free GPUs) and cannot reclaim"
    )


def test_a_queue_with_weight_reclaims_from_a_weight_zero_queue_on_idle_gpus() -> None:
    queues = [
        dept("org", 0),
        project("a", gpus=0, over_quota_weight=1),
        project("z", gpus=0, over_quota_weight=0),
    ]
    snap = snapshot(
        [node("n1", 8)],
        queues,
        [
            workload("idle-use", project="z", gpus=8, running_on=["n1"]),
            workload("ask", project="a"),
        ],
    )
    final, _ = settle(snap)
    assert set(running(final)) == {"ask"}


# ------------------------------------------------------------ time-based fairshare
def test_time_based_usage_of_the_whole_pool_for_the_whole_window_is_one() -> None:
    # busy held all 8 GPUs for the whole window: usage 1.0, so its over-quota weight is
    # max(0, 0.5 + (0.5 - 1.0)) = 0 and idle gets all 8 (at 0.924, busy would get 1)
    window, half_life = 4000.0, 1000.0
    usage = [UsageRecord("busy", "default", t, t + 2000, 8 * 2000) for t in (0, 2000)]
    pools = [
        PoolConfig(
            name="default",
            fairshare_mode="time_based",
            time_based_window=window,
            time_based_half_life=half_life,
            time_based_k=1.0,
        )
    ]
    snap = snapshot(
        [node("n1", 8)],
        [dept("org", 0), project("busy"), project("idle")],
        [workload("b", project="busy", pods=8), workload("i", project="idle", pods=8)],
        pools=pools,
        now=window,
        usage=usage,
    )
    result = run_cycle(snap)
    assert _gpus(result, "busy") == pytest.approx(0)
    assert _gpus(result, "idle") == pytest.approx(8)


# ------------------------------------------------------------ pools nothing asks for
@pytest.mark.parametrize("from_quota", [False, True])
def test_a_pool_nothing_asks_for_gets_the_figures_the_division_would_give(monkeypatch, from_quota):
    """Where no workload asks for a resource of a pool, every queue's fairshare of it is
    0 and its weight is what the division would record, without dividing (a large
    cluster's idle pools would otherwise be divided every cycle for nothing)."""
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.plugins.proportion.figures import QueueFigures

    pools = [
        PoolConfig(name="default", over_quota_weight_from_quota=from_quota),
        PoolConfig(name="idle", over_quota_weight_from_quota=from_quota),
    ]
    snap = snapshot(
        [node("n1"), node("n2", pool="idle")],
        [
            dept("org", 6),
            project("a", gpus=2, over_quota_weight=3),
            project("b", gpus=4, over_quota_weight=0),
            QueueSpec(name="c", parent="org", quota={}, over_quota_weight=2),
        ],
        [
            workload("w", project="a", gpus=3, pools=("default",)),
            workload("x", project="b", gpus=1, cpu=2.0, pools=("default",)),
        ],
        pools=pools,
    )
    session = Session(snap)
    quick = QueueFigures(session)
    assert "idle" not in quick._asked()  # the quick way was taken there
    monkeypatch.setattr(
        QueueFigures, "_asked", lambda self: {p.name: [True, True, True] for p in pools}
    )
    divided = QueueFigures(session)
    assert quick.fair == divided.fair and quick.weight == divided.weight
    assert quick.fair[("a", "idle")] == [0.0, 0.0, 0.0]
    assert quick.fair[("a", "default")][0] > 0
