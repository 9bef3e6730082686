"""Preempt: inside a queue, a pending workload takes resources from preemptible
workloads of strictly lower priority (elastic ones shrink first), evicting as few as
possible."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import (
    Budget,
    VictimStep,
    free_and_place,
    in_queue_order,
    pending_for_pool,
    quota_pools,
)
from scheduler_core.engine.decisions import EVICT_PRIORITY
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState


def preempt(session: Session) -> None:
    """Let more important work of a queue displace its less important work."""
    for pool in quota_pools(session, flag="preemption"):
        jobs = pending_for_pool(session, pool.name)
        if not jobs:
            continue
        failed: set[tuple[object, ...]] = set()
        # lowest priority of a possible victim per queue: only more important work can
        # preempt, and what preempt places is more important than what it evicts
        lowest: dict[str, int] = {}
        for v in session.running_by_pool[pool.name].values():
            if v.preemptible:
                lowest[v.project] = min(lowest.get(v.project, v.priority), v.priority)
        jobs = [w for w in jobs if w.project in lowest and w.priority > lowest[w.project]]
        budget = Budget(pool.config.max_preemptions_per_cycle)
        if jobs:
            in_queue_order(
                session,
                pool.name,
                jobs,
                partial(_attempt, session, pool, failed=failed, budget=budget),
                viable=partial(_may_succeed, session, failed),
                frozen=budget.spent,
            )


def _signature(session: Session, w: WorkloadState) -> tuple[object, ...]:
    """What an attempt's outcome depends on: the kind of job, its priority (which
    running work it may evict) and the state (it changes when something commits)."""
    return (w.kind_key, w.priority, session.commits)


def _may_succeed(session: Session, failed: set[tuple[object, ...]], w: WorkloadState) -> bool:
    """False once an alike job failed since the last commit. A run of alike jobs that
    failed is then skipped at once (a lower priority in the run evicts from fewer
    victims, so it would fail too)."""
    return _signature(session, w) not in failed


def _attempt(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    failed: set[tuple[object, ...]],
    budget: Budget,
) -> None:
    if w.pods or w.failed or budget.spent():
        return
    sig = _signature(session, w)
    if sig in failed:
        return
    counts = session.gang_counts(w)
    extra = session.gang_request(w)
    if session.admission_problem(w, pool.name, extra) is not None:
        failed.add(sig)
        return
    victims = [
        v
        for v in session.running_by_queue.get((w.project, pool.name), {}).values()
        if v.preemptible and v.priority < w.priority
    ]
    room = pool.free_gpus + sum(v.allocated()[0] for v in victims)
    if not victims or room + 1e-9 < extra[0]:
        failed.add(sig)
        return
    victims.sort(key=session.victim_key)

    def allowed(step: VictimStep) -> bool:
        return True

    stmt = session.statement()
    if free_and_place(
        session,
        stmt,
        w,
        pool,
        counts,
        victims,
        allowed,
        EVICT_PRIORITY,
        lambda v: f"preempted by higher-priority {w.name} (priority {w.priority})",
    ):
        stmt.commit()
        budget.use()
        return
    stmt.discard()
    failed.add(sig)
