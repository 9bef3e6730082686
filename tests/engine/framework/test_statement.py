"""The statement: a journal of changes to a session that commits or discards as a
whole, with marks to roll back just the tail (how actions use it)."""

from __future__ import annotations

from scheduler_core.engine.decisions import EVICT_RECLAIM
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.snapshot import PodPlacement
from tests.engine.factories import dept, node, project, snapshot, workload


def _session() -> Session:
    """Two 4-GPU nodes; `old` runs 2 pods on n1, `new` (2 pods) waits."""
    return Session(
        snapshot(
            [node("n1", gpus=4), node("n2", gpus=4)],
            [dept("org"), project("p")],
            [
                workload("old", gpus=1, pods=2, running_on=["n1", "n1"]),
                workload("new", gpus=2, pods=2),
            ],
        )
    )


def _state(session: Session) -> tuple[object, ...]:
    """What a statement may change, as one comparable value."""
    return (
        tuple((w.id, tuple(w.pods), w.flags()) for w in session.workloads.values()),
        tuple((n.name, tuple(n.dev_used), n.free_whole) for n in session.nodes.values()),
        session.pools["default"].free_gpus,
        tuple(sorted((k, tuple(v)) for k, v in session.acc.items())),
        tuple(sorted(session.running_by_pool["default"])),
    )


def _two_gpu_pod(node_name: str, first: int) -> PodPlacement:
    return PodPlacement("main", node_name, (first, first + 1), 1.0)


def test_commit_keeps_every_change_and_counts_a_commit() -> None:
    session = _session()
    new = session.workloads["new"]
    stmt = session.statement()
    stmt.bind(new, _two_gpu_pod("n2", 0))
    stmt.bind(new, _two_gpu_pod("n2", 2))
    stmt.set_pool(new, "default")
    stmt.commit()
    assert session.commits == 1
    assert [p.node for p in new.pods] == ["n2", "n2"]
    assert new.pool == "default"
    assert session.nodes["n2"].free_whole == 0
    assert session.pools["default"].free_gpus == 2.0  # 8 GPUs, 2 + 4 taken
    assert session.acc[("p", "default")][0] == 6.0
    assert "new" in session.running_by_pool["default"]


def test_discard_undoes_everything_in_reverse_order() -> None:
    session = _session()
    before = _state(session)
    old = session.workloads["old"]
    new = session.workloads["new"]
    stmt = session.statement()
    stmt.evict(old, EVICT_RECLAIM, "reclaimed by q", "new")
    stmt.bind(new, _two_gpu_pod("n1", 0))
    stmt.bind(new, _two_gpu_pod("n1", 2))
    stmt.set_pool(new, "default")
    assert not old.pods and old.evicted
    stmt.discard()
    assert _state(session) == before
    assert session.commits == 0
    assert not old.evicted and old.evict_reason == ""


def test_rollback_to_a_mark_undoes_only_the_tail() -> None:
    session = _session()
    old = session.workloads["old"]
    new = session.workloads["new"]
    stmt = session.statement()
    stmt.unbind(old, old.pods[-1])
    stmt.note_reason(old, "shrunk for new")
    after_shrink = _state(session)
    mark = stmt.mark()
    stmt.bind(new, _two_gpu_pod("n2", 0))  # the first pod of a gang fits...
    stmt.set_pool(new, "default")
    stmt.rollback(mark)  # ...the second does not: give the gang up, keep the shrink
    assert _state(session) == after_shrink
    assert len(old.pods) == 1 and old.evict_reason == "shrunk for new"
    stmt.commit()
    assert len(old.pods) == 1
    assert session.acc[("p", "default")][0] == 1.0


def test_rollback_to_the_current_mark_changes_nothing() -> None:
    session = _session()
    new = session.workloads["new"]
    stmt = session.statement()
    stmt.bind(new, _two_gpu_pod("n2", 0))
    state = _state(session)
    stmt.rollback(stmt.mark())
    assert _state(session) == state


def test_nested_marks_roll_back_innermost_first() -> None:
    # free_and_place inside an action: evict victims, then try_start (its own mark),
    # and put back what turned out not to be needed
    session = _session()
    before = _state(session)
    old = session.workloads["old"]
    new = session.workloads["new"]
    stmt = session.statement()
    outer = stmt.mark()
    flags = old.flags()
    pods = list(old.pods)
    stmt.evict(old, EVICT_RECLAIM, "reclaimed by p", "new")
    evicted = _state(session)
    inner = stmt.mark()
    stmt.bind(new, _two_gpu_pod("n1", 0))
    stmt.bind(new, _two_gpu_pod("n1", 2))
    stmt.rollback(inner)
    assert _state(session) == evicted
    for pod in pods:  # put the victim back, as it was
        stmt.bind(old, pod)
    stmt.restore_flags(old, flags)
    assert _state(session)[:4] == before[:4]
    stmt.rollback(outer)
    assert _state(session) == before
    stmt.discard()
    assert _state(session) == before


def test_unbinding_a_middle_pod_is_undone_in_place() -> None:
    session = _session()
    old = session.workloads["old"]
    first = old.pods[0]
    stmt = session.statement()
    stmt.unbind(old, first)
    assert old.pods[0] is not first
    stmt.discard()
    assert old.pods[0] is first and len(old.pods) == 2


def test_fail_and_mark_moved_are_undone_by_discard() -> None:
    session = _session()
    old = session.workloads["old"]
    stmt = session.statement()
    stmt.mark_moved(old)
    stmt.evict(old, "fault", "node n1 is down", None)
    stmt.fail(old, "backoff limit reached")
    assert old.failed and old.moved
    stmt.discard()
    assert not old.failed and not old.moved and len(old.pods) == 2


def test_a_statement_after_a_commit_starts_empty() -> None:
    session = _session()
    new = session.workloads["new"]
    first = session.statement()
    first.bind(new, _two_gpu_pod("n2", 0))
    first.commit()
    committed = _state(session)
    second = session.statement()
    assert second.mark() == 0
    second.bind(new, _two_gpu_pod("n2", 2))
    second.discard()
    assert _state(session) == committed
    assert session.commits == 1
