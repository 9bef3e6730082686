"""Expand: running elastic workloads grow one pod at a time into free capacity. Every
workload already has its minimum (allocate starts gangs at their minimum); the extra
pods go one at a time to the best queue (fairshare order) and, within it, to the
workload with the fewest pods above its minimum (priority, then age, break ties).
Shrinking is part of reclaim and preempt, which take pods from elastic workloads
before they evict anything whole."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import next_pod, quota_pools, try_start
from scheduler_core.engine.actions.queue_tree import QueueTree
from scheduler_core.engine.framework.session import Session, Vec
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.reasons import gave_up_pods


def _grow_key(session: Session, w: WorkloadState) -> tuple[object, ...]:
    """Order of growing workloads within a project (smaller first): pods above the
    minimum, then job order."""
    return (w.extra_pods(), session.job_key(w))


def _next_request(w: WorkloadState) -> Vec:
    """What the next pod of `w` takes."""
    one = next_pod(w)
    assert one is not None, "only workloads below their wanted pods grow"
    return list(w.request_of(one))


def expand(session: Session) -> None:
    """Grow elastic workloads while pods fit, limits and quotas allow; say why each one
    that stays below its pods does not grow."""
    for pool in quota_pools(session):
        growing: list[WorkloadState] = []
        for w in session.running_by_pool[pool.name].values():
            if w.missing_pods() <= 0:
                continue
            if w.evicted or len(w.pods) < len(w.initial_pods):
                _not_growing(session, w, pool.name, "capacity", gave_up_pods(w))
            else:
                growing.append(w)
        if growing:
            _grow(session, pool, growing)


def _grow(session: Session, pool: PoolIndex, growing: list[WorkloadState]) -> None:
    """Hand out pods one at a time, always to the first workload in queue order (the
    tree of queue_tree.QueueTree, keyed with each one's next pod), and within a
    project by _grow_key."""
    name = pool.name
    tree = QueueTree(session, name, growing, _next_request, partial(_grow_key, session))
    while (w := tree.pop()) is not None:
        one = next_pod(w)
        assert one is not None
        extra = list(w.request_of(one))
        problem = session.admission_problem(w, name, extra)
        if problem is not None:
            _not_growing(session, w, name, *problem)
            continue
        stmt = session.statement()
        if not try_start(session, stmt, w, pool, one):
            stmt.discard()
            _not_growing(session, w, name, "capacity", describe_misfit(pool, w, one))
            continue
        stmt.commit()
        if next_pod(w) is not None:
            tree.again(w)


def _not_growing(session: Session, w: WorkloadState, pool: str, kind: str, text: str) -> None:
    """Record why `w` does not get its next pod, unless reclaim or preempt already said
    why they could not make room for it this cycle (theirs is the fuller answer)."""
    if pool not in session.reasons.get(w.id, {}):
        session.set_reason(w, pool, kind, text)
