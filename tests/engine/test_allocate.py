"""Allocate: cluster in, placements out."""

from __future__ import annotations

import pytest

from scheduler_core.engine import Allocate, PoolConfig, run_cycle
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload


def _placements(snap):  # type: ignore[no-untyped-def]
    result = run_cycle(snap)
    return {d.workload: d for d in result.decisions if isinstance(d, Allocate)}, result


@pytest.mark.parametrize(
    ("placement", "expected"),
    [("binpack", {"a": ["n1"], "b": ["n1"]}), ("spread", {"a": ["n1"], "b": ["n2"]})],
)
def test_binpack_fills_a_node_spread_balances(
    placement: str, expected: dict[str, list[str]]
) -> None:
    snap = snapshot(
        [node("n1", 4), node("n2", 4)],
        [dept("org", 8), project("p", gpus=8)],
        [workload("a"), workload("b")],
        pools=[PoolConfig(name="default", placement=placement)],
    )
    final, _ = settle(snap)
    assert running(final) == expected


def test_fractions_share_a_device_before_opening_another() -> None:
    snap = snapshot(
        [node("n1", 2)],
        [dept("org", 2), project("p", gpus=2)],
        [workload("a", gpus=0.5), workload("b", gpus=0.25), workload("c", gpus=0.5)],
    )
    allocs, _ = _placements(snap)
    devices = {w: (d.pods[0].devices, d.pods[0].gpu_fraction) for w, d in allocs.items()}
    assert devices["a"] == ((0,), 0.5)
    assert devices["b"] == ((0,), 0.25)
    assert devices["c"] == ((1,), 0.5)  # device 0 has only 0.25 left


def test_whole_gpus_get_distinct_devices() -> None:
    snap = snapshot(
        [node("n1", 8)],
        [dept("org", 8), project("p", gpus=8)],
        [workload("a", gpus=3), workload("b", gpus=2)],
    )
    allocs, _ = _placements(snap)
    assert allocs["a"].pods[0].devices == (0, 1, 2)
    assert allocs["b"].pods[0].devices == (3, 4)


def test_node_selector_and_node_state() -> None:
    snap = snapshot(
        [
            node("down", 8, state="down", labels={"gpu": "h100"}),
            node("cordoned", 8, state="cordoned", labels={"gpu": "h100"}),
            node("a100", 8, labels={"gpu": "a100"}),
            node("h100", 8, labels={"gpu": "h100"}),
        ],
        [dept("org", 8), project("p", gpus=8)],
        [
            workload("w", node_selector={"gpu": "h100"}),
            workload("x", node_selector={"gpu": "v100"}),
        ],
    )
    allocs, result = _placements(snap)
    assert allocs["w"].pods[0].node == "h100"
    assert "x" not in allocs
    assert "node selector gpu=v100" in result.pending["x"].reason


def test_gang_is_all_or_nothing() -> None:
    snap = snapshot(
        [node("n1", 4), node("n2", 4)],
        [dept("org", 8), project("p", gpus=8)],
        [workload("small", gpus=2, running_on=["n1"]), workload("gang", pods=7)],
    )
    allocs, result = _placements(snap)
    assert "gang" not in allocs
    assert result.pending["gang"].reason.startswith(
        "gang needs 7 GPUs on one pool; pool default has 6 free"
    )


def test_limits_cap_project_and_department() -> None:
    snap = snapshot(
        [node("n1", 8)],
        [dept("org", 8), project("p", gpus=2, limit=3)],
        [workload("a", gpus=2), workload("b", gpus=2), workload("c", gpus=1)],
    )
    final, results = settle(snap)
    assert set(running(final)) == {"a", "c"}
    assert results[-1].pending["b"].reason_kind == "limit"
    assert "limited to 3 GPUs" in results[-1].pending["b"].reason


def test_non_preemptible_only_within_quota_with_a_reason_naming_numbers() -> None:
    snap = snapshot(
        [node("n1", 8)],
        [dept("org", 8), project("vision", gpus=2)],
        [
            workload(
                "nb1", project="vision", kind="interactive", priority=100, preemptible=False, gpus=2
            ),
            workload(
                "nb2", project="vision", kind="interactive", priority=100, preemptible=False, gpus=1
            ),
        ],
    )
    final, results = settle(snap)
    assert set(running(final)) == {"nb1"}
    info = results[-1].pending["nb2"]
    assert (
        info.reason == "project vision is at its quota of 2 GPUs in pool default; "
        "interactive workloads cannot use over-quota GPUs"
    )
    assert info.queue_position == 1


def test_candidate_pools_in_order_of_preference() -> None:
    pools = [PoolConfig(name="a100"), PoolConfig(name="h100")]
    nodes = [node("a", 1, pool="a100"), node("h", 4, pool="h100")]
    queues = [dept("org"), project("p")]
    snap = snapshot(
        nodes,
        queues,
        [
            workload("w1", pools=("h100", "a100")),
            workload("w2", pools=("a100", "h100")),
            workload("w3", pools=("a100", "h100")),
        ],
        pools=pools,
    )
    final, _ = settle(snap)
    assert running(final) == {"w1": ["h"], "w2": ["a"], "w3": ["h"]}


def test_queue_positions_follow_priority_then_submission() -> None:
    snap = snapshot(
        [node("n1", 1)],
        [dept("org", 1), project("p", gpus=1)],
        [
            workload("run", running_on=["n1"]),
            workload("late", submitted_at=5),
            workload("early", submitted_at=1),
            workload("urgent", submitted_at=9, priority=80, preemptible=True),
        ],
    )
    result = run_cycle(snap)
    # urgent preempts `run` (higher priority in the same queue)
    positions = {w: i.queue_position for w, i in result.pending.items()}
    assert (
        positions == {"early": 1, "late": 2}
        or positions == {"run": 1, "early": 2, "late": 3}
        or "urgent" not in positions
    )


def test_a_run_of_alike_jobs_that_do_not_fit_neither_blocks_nor_hides_the_others() -> None:
    """Jobs of one kind share one verdict until something commits: the big ones ahead
    all wait for the same reason, a small one behind them still starts, and the second
    of two alike small ones is judged again after the first took the last GPU."""
    snap = snapshot(
        [node("n1", 4)],
        [dept("org", 4), project("p", gpus=4)],
        [workload(f"big-{i}", gpus=4, pods=2, priority=90) for i in range(3)]
        + [workload("other-big", gpus=8, priority=90, node_selector={"zone": "x"})]
        + [workload("small-0", gpus=3), workload("small-1", gpus=3)],
    )
    allocs, result = _placements(snap)
    assert set(allocs) == {"small-0"}
    reasons = {w: result.pending[w].reason for w in ("big-0", "big-1", "big-2")}
    assert len(set(reasons.values())) == 1
    assert result.pending["other-big"].reason != reasons["big-0"]  # its own kind, own words
    assert "pool default has 1 free" in result.pending["small-1"].reason
