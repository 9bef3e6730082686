"""Preempt: inside a queue, a pending workload (or a running elastic workload for its
next pod) takes resources from preemptible workloads of strictly lower priority
(elastic ones shrink first), evicting as few as possible. When the project's or
department's limit, not the free capacity, blocks it, the same victims make room
under the limit."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import (
    Budget,
    VictimStep,
    ask_kind,
    asked,
    asked_request,
    fits_now,
    free_and_place,
    in_queue_order,
    jobs_for_pool,
    quota_pools,
)
from scheduler_core.engine.decisions import EVICT_PRIORITY
from scheduler_core.engine.framework.session import Session, Vec
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.reasons import LIMIT
from scheduler_core.engine.resources import EPSILON


def preempt(session: Session) -> None:
    """Let more important work of a queue displace its less important work."""
    for pool in quota_pools(session, flag="preemption"):
        jobs = jobs_for_pool(session, pool.name)
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
                extra_of=partial(asked_request, session),
                viable=partial(_may_succeed, session, failed),
                frozen=budget.spent,
            )


def _signature(session: Session, w: WorkloadState) -> tuple[object, ...]:
    """What an attempt's outcome depends on: the kind of job, its priority (which
    running work it may evict) and the state (it changes when something commits)."""
    return (*ask_kind(w), w.priority, session.commits)


def _may_succeed(session: Session, failed: set[tuple[object, ...]], w: WorkloadState) -> bool:
    """False once an alike job failed since the last commit. A run of alike jobs that
    failed is then skipped at once (a lower priority in the run evicts from fewer
    victims, so it would fail too)."""
    return _signature(session, w) not in failed


def _admissible(session: Session, pool: PoolIndex, w: WorkloadState, extra: Vec, held: Vec) -> bool:
    """Could `w` be admitted once victims holding `held` are gone? A project's or
    department's limit gives way to what they hold (they are of the same project);
    nothing else that blocks admission does."""
    problem = session.admission_problem(w, pool.name, extra)
    if problem is None:
        return True
    if problem[0] != LIMIT:
        return False
    rest = [max(0.0, e - h) for e, h in zip(extra, held, strict=True)]
    return session.admission_problem(w, pool.name, rest) is None


def _attempt(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    failed: set[tuple[object, ...]],
    budget: Budget,
) -> None:
    if w.failed or budget.spent():
        return
    sig = _signature(session, w)
    if sig in failed:
        return
    counts, extra = asked(session, w)
    if w.pods and fits_now(session, pool, w, counts):
        return  # expand gives it its next pod without taking anything
    victims = [
        v
        for v in session.running_by_queue.get((w.project, pool.name), {}).values()
        if v.preemptible and v.priority < w.priority
    ]
    held = [0.0, 0.0, 0.0]
    for v in victims:
        for i, amount in enumerate(v.allocated()):
            held[i] += amount
    if (
        not victims
        or pool.free_gpus + held[0] + EPSILON < extra[0]
        or not _admissible(session, pool, w, extra, held)
    ):
        failed.add(sig)
        return
    victims.sort(key=session.victim_key)

    def allowed(step: VictimStep) -> bool:
        return True

    def admits(x: WorkloadState, more: Vec) -> bool:
        return session.admission_problem(x, pool.name, more) is None

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
        admits=admits,
    ):
        stmt.commit()
        budget.use()
        return
    stmt.discard()
    failed.add(sig)
