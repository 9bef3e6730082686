"""Determined policies and time-based fairshare."""

from __future__ import annotations

from scheduler_core.engine import PoolConfig, UsageRecord, run_cycle
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload


def test_fairshare_policy_splits_by_demand_times_weight() -> None:
    pools = [PoolConfig(name="default", policy="fairshare")]
    snap = snapshot(
        [node("n1", 8)],
        [dept("lab"), project("team", "lab")],
        [workload("a", pods=10, min_pods=1, weight=3), workload("b", pods=30, min_pods=1)],
        pools=pools,
    )
    final, _ = settle(snap)
    assert {k: len(v) for k, v in running(final).items()} == {"a": 4, "b": 4}


def test_fairshare_policy_gang_that_cannot_get_its_minimum_waits() -> None:
    pools = [PoolConfig(name="default", policy="fairshare")]
    snap = snapshot(
        [node("n1", 8)],
        [dept("lab"), project("team", "lab")],
        [workload("el", pods=8, min_pods=1), workload("gang", pods=6)],
        pools=pools,
    )
    final, results = settle(snap)
    assert {k: len(v) for k, v in running(final).items()} == {"el": 8}
    assert results[-1].pending["gang"].reason_kind == "fairshare"


def test_priority_policy_without_preemption_blocks_lower_priority() -> None:
    pools = [PoolConfig(name="default", policy="priority", preemption=False)]
    snap = snapshot(
        [node("n1", 4)],
        [dept("lab"), project("team", "lab")],
        [
            workload("hold", gpus=2, priority=10, running_on=["n1"]),
            workload("high", gpus=4, priority=90),
            workload("low", gpus=1, priority=20),
        ],
        pools=pools,
    )
    result = run_cycle(snap)
    assert result.decisions == ()
    assert result.pending["low"].reason_kind == "priority"


def test_time_based_fairshare_gives_the_idle_queue_more() -> None:
    pools = [
        PoolConfig(
            name="default",
            fairshare_mode="time_based",
            time_based_window=1000,
            time_based_half_life=500,
            time_based_k=1.0,
        )
    ]
    usage = [UsageRecord("busy", "default", 0, 1000, 8 * 1000.0)]
    snap = snapshot(
        [node("n1", 8)],
        [dept("org"), project("busy"), project("idle")],
        [workload(f"b{i}", project="busy") for i in range(8)]
        + [workload(f"i{i}", project="idle") for i in range(8)],
        now=1000,
        usage=usage,
        pools=pools,
    )
    result = run_cycle(snap)
    assert (
        result.queues["idle"]["default"].fairshare.gpus
        > result.queues["busy"]["default"].fairshare.gpus
    )


def test_same_snapshot_same_decisions() -> None:
    snap = snapshot(
        [node("n1", 4), node("n2", 4)],
        [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)],
        [workload(f"w{i}", project=f"p{i % 2 + 1}", gpus=i % 3 + 1) for i in range(10)],
    )
    assert run_cycle(snap) == run_cycle(snap)
