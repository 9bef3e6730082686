"""The proportion plugin through whole cycles: over-quota weight 0 and time-based
fairshare. Cluster in, placements, fairshare figures and reasons out."""

from __future__ import annotations

import pytest

from scheduler_core.engine import PoolConfig, UsageRecord, run_cycle
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload

NO_EVICTIONS = [PoolConfig(name="default", preemption=False, consolidation=False)]


def _gpus(result, queue: str) -> float:  # type: ignore[no-untyped-def]
    return float(result.queues[queue]["default"].fairshare.gpus)


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
