"""The alike window: the actions look at the first ALIKE_WINDOW waiting workloads of
each kind; the ones behind wait for the same reason and keep their place in the queue,
and come into view as soon as the last one in view starts, so that what starts is what
would start with all of them in view."""

from __future__ import annotations

from scheduler_core.engine import Allocate, PoolConfig, run_cycle
from scheduler_core.engine.framework import session as session_module
from scheduler_core.engine.framework.alike_window import ALIKE_WINDOW, AlikeWindow
from tests.engine.factories import dept, node, project, snapshot, workload

NOW = 1_000.0
POOLS = [PoolConfig(name="default", consolidation=False)]
QUEUES = [dept("org", 64), project("p", gpus=64)]
SWEEP = 3 * ALIKE_WINDOW + 5


def _sweep(count: int = SWEEP) -> list:  # type: ignore[type-arg]
    return [workload(f"s{i:03d}", gpus=1, submitted_at=NOW - 500 + i) for i in range(count)]


def _started(result) -> set[str]:  # type: ignore[no-untyped-def]
    return {d.workload for d in result.decisions if isinstance(d, Allocate)}


def test_a_sweep_longer_than_the_window_starts_in_one_cycle_as_far_as_it_fits() -> None:
    nodes = [node(f"n{i}", 8) for i in range(10)]  # 80 GPUs
    result = run_cycle(snapshot(nodes, QUEUES, _sweep(), POOLS, now=NOW))
    # the first 80 in queue order (the project may borrow beyond its 64), none left over
    assert _started(result) == {f"s{i:03d}" for i in range(80)}
    assert not result.more_alike
    waiting = [result.pending[f"s{i:03d}"] for i in range(80, SWEEP)]
    assert [info.queue_position for info in waiting] == list(range(1, SWEEP - 80 + 1))
    assert len({info.reason for info in waiting}) == 1


def test_workloads_behind_the_window_wait_for_the_same_reason_in_their_place() -> None:
    nodes = [node("n1", 8)]
    work = [workload("big", gpus=8, running_on=["n1"], started_at=NOW - 60), *_sweep()]
    result = run_cycle(snapshot(nodes, QUEUES, work, POOLS, now=NOW))
    assert not _started(result)
    assert not result.more_alike
    # the ones behind the window give the reason of the window's last one
    reasons = {result.pending[spec.id].reason for spec in work[1:]}
    assert reasons == {result.pending[f"s{ALIKE_WINDOW - 1:03d}"].reason}
    assert "waiting for the next scheduling cycle" not in reasons.pop()
    positions = [result.pending[spec.id].queue_position for spec in work[1:]]
    assert positions == list(range(1, SWEEP + 1))


def test_the_same_workloads_start_with_a_window_of_two(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    nodes = [node(f"n{i}", 8) for i in range(4)]
    work = [
        *_sweep(20),
        *[workload(f"g{i}", gpus=4, pods=2, submitted_at=NOW - 600 + i) for i in range(5)],
    ]
    wide = run_cycle(snapshot(nodes, QUEUES, work, POOLS, now=NOW))
    monkeypatch.setattr(session_module, "ALIKE_WINDOW", 2)
    narrow = run_cycle(snapshot(nodes, QUEUES, work, POOLS, now=NOW))
    assert narrow.decisions == wide.decisions
    assert {k: v.queue_position for k, v in narrow.pending.items()} == {
        k: v.queue_position for k, v in wide.pending.items()
    }


def test_the_window_takes_the_first_of_each_kind_in_job_order_and_lets_in_the_next() -> None:
    class W:
        def __init__(self, wid: str, kind: int, key: float) -> None:
            self.id, self.kind_key, self.key, self.pods = wid, kind, key, []

    pending = [W(f"a{i}", 0, 10 - i) for i in range(6)] + [W("b0", 1, 0.0)]
    window = AlikeWindow(pending, lambda w: (w.key,), 2)  # type: ignore[arg-type,attr-defined]
    # a5, a4 come first (smallest keys); a3..a0 wait behind a4; b0 alone is in view
    assert [w for w in ("a5", "a4", "a3", "a0", "b0") if window.parked(w)] == ["a3", "a0"]
    assert window.lead_of("a0").id == "a4"  # type: ignore[union-attr]
    let_in = window.let_in_after(pending[4])  # type: ignore[arg-type]  # a4 started
    assert [w.id for w in let_in] == ["a3", "a2"]
    assert window.lead_of("a0").id == "a2"  # type: ignore[union-attr]
    assert not window.parked("a3")
