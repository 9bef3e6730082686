"""Determined's priority policy: higher priority first, FIFO among equals; zero-GPU
workloads in a separate pass. With preemption, a pending workload that does not fit
evicts the lowest-priority preemptible workloads (elastic ones shrink first) if that
makes it fit, and lower-priority preemptible workloads may be backfilled onto idle
slots a blocked higher-priority workload cannot use. Without preemption nothing of
lower priority starts while a higher-priority workload waits. Non-preemptible
workloads are never evicted."""

from __future__ import annotations

from scheduler_core.engine.actions.common import (
    VictimStep,
    free_and_place,
    try_start,
)
from scheduler_core.engine.actions.elastic import next_pod
from scheduler_core.engine.decisions import EVICT_PRIORITY
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.framework.statement import Statement
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.plugins.priority import priority_order
from scheduler_core.engine.policies.common import pool_workloads, uses_gpus, zero_gpu_pass
from scheduler_core.engine.reasons import priority_blocked


def schedule_priority_pool(session: Session, pool: PoolIndex) -> None:
    """Run Determined's priority policy on one pool."""
    preemption = pool.config.preemption
    workloads = pool_workloads(session, pool)
    blocker: WorkloadState | None = None
    for w in sorted((w for w in workloads if uses_gpus(w)), key=priority_order):
        if w.failed:
            continue
        if w.pods:
            if w.pool != pool.name:
                continue
            _grow(session, pool, w)
            if w.missing_pods() > 0 and blocker is None:
                blocker = w
            continue
        if (
            blocker is not None
            and w.priority < blocker.priority
            and (not preemption or not w.preemptible)
        ):
            session.set_reason(w, pool.name, "priority", priority_blocked(blocker, pool.name))
            continue
        counts = session.gang_counts(w)
        stmt = session.statement()
        if try_start(session, stmt, w, pool, counts) or (
            preemption and _preempt(session, stmt, pool, w, counts)
        ):
            stmt.commit()
            _grow(session, pool, w)
            if w.missing_pods() > 0 and blocker is None:
                blocker = w
            continue
        stmt.discard()
        session.set_reason(w, pool.name, "capacity", describe_misfit(pool, w, counts))
        if blocker is None:
            blocker = w
    zero_gpu_pass(session, pool, workloads, priority_order)


def _grow(session: Session, pool: PoolIndex, w: WorkloadState) -> None:
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
    stmt: Statement,
    pool: PoolIndex,
    w: WorkloadState,
    counts: dict[str, int],
) -> bool:
    victims = [
        v
        for v in session.running_by_pool[pool.name].values()
        if v.preemptible and v.priority < w.priority
    ]
    if not victims:
        return False
    victims.sort(key=session.victim_key)

    def allowed(step: VictimStep) -> bool:
        return True

    return free_and_place(
        session,
        stmt,
        w,
        pool,
        counts,
        victims,
        allowed,
        EVICT_PRIORITY,
        lambda v: f"preempted by higher-priority {w.name} (priority {w.priority})",
    )
