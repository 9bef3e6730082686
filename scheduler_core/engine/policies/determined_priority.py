"""Determined's priority policy: higher priority first, FIFO among equals. GPU workloads
and zero-GPU workloads are scheduled in two passes under the same rules, each blind to
the other: a waiting GPU workload neither holds back nor evicts a zero-GPU one, and the
other way round. With preemption, a pending workload that does not fit evicts the
lowest-priority preemptible workloads of its pass (elastic ones shrink first) if that
makes it fit, and lower-priority preemptible workloads may be backfilled onto idle
capacity a blocked higher-priority workload cannot use. Without preemption nothing of
lower priority starts while a higher-priority workload waits. Non-preemptible
workloads are never evicted."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import free_and_place, next_pod, try_start
from scheduler_core.engine.decisions import EVICT_PRIORITY
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState, priority_order
from scheduler_core.engine.framework.statement import Statement
from scheduler_core.engine.policies.common import by_gpu_use, pool_workloads, start_or_explain
from scheduler_core.engine.reasons import preempted_by_priority, priority_blocked


def schedule_priority_pool(session: Session, pool: PoolIndex) -> None:
    """Run Determined's priority policy on one pool: the GPU pass, then the zero-GPU
    pass."""
    for workloads in by_gpu_use(pool_workloads(session, pool)):
        priority_pass(session, pool, workloads)


def priority_pass(session: Session, pool: PoolIndex, workloads: list[WorkloadState]) -> None:
    """Schedule `workloads` (running in `pool` or pending for it) by priority: running
    ones grow into free capacity, pending ones start, preempting lower-priority
    preemptible ones among `workloads` when the pool allows it. The first workload
    left wanting (pending, or running with fewer pods than it wants) holds back every
    lower-priority one that may not be backfilled."""
    preemption = pool.config.preemption
    # what may be preempted: preemptible workloads that run now, lowest first (those
    # started in this pass have at least the priority of any workload still to come)
    running = [v for v in workloads if v.pods and v.preemptible] if preemption else []
    running.sort(key=session.victim_key)
    blocker: WorkloadState | None = None
    for w in sorted(workloads, key=priority_order):
        if not w.pods:
            if (
                blocker is not None
                and w.priority < blocker.priority
                and not (preemption and w.preemptible)
            ):
                session.set_reason(w, pool.name, "priority", priority_blocked(blocker, pool.name))
                continue
            make_room = partial(_preempt, session, pool, w, running) if preemption else None
            if not start_or_explain(session, pool, w, make_room):
                blocker = blocker or w
                continue
        _grow(session, pool, w)
        if w.missing_pods() > 0:
            blocker = blocker or w


def _grow(session: Session, pool: PoolIndex, w: WorkloadState) -> None:
    """Add pods to elastic `w` one at a time while they fit the free capacity."""
    if len(w.pods) < len(w.initial_pods):
        return  # shrunk this cycle: do not take the room back at once
    while True:
        one = next_pod(w)
        if one is None:
            return
        stmt = session.statement()
        if not try_start(session, stmt, w, pool, one):
            stmt.discard()
            return
        stmt.commit()


def _preempt(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    running: list[WorkloadState],
    stmt: Statement,
    counts: dict[str, int],
) -> bool:
    """Free room for `w` among the `running` preemptible workloads (in victim order) of
    lower priority than `w`, lowest first, and place it (within `stmt`)."""
    victims = [v for v in running if v.pods and v.priority < w.priority]
    if not victims:
        return False
    reason = preempted_by_priority(w)
    return free_and_place(
        session,
        stmt,
        w,
        pool,
        counts,
        victims,
        lambda step: True,
        EVICT_PRIORITY,
        lambda v: reason,
    )
