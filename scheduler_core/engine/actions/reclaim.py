"""Reclaim: a queue within its fairshare (after the allocation) takes resources back
from queues over their fairshare, and a queue within its deserved quota from queues
over their deserved quota. Each victim is judged on what its queue holds before it is
taken: one that straddles the deserved line is taken whole, one wholly within the
deserved quota is protected; across departments the departments are judged too.
Elastic victims shrink first. Whole victims are taken queue by queue, the queue furthest
over what it is entitled to first (KAI-Scheduler's victim queue order); a pool that
weighs lost work takes the lowest priority, then the most recently started run, of all
the queues that may give."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import (
    Budget,
    ask_kind,
    asked,
    asked_request,
    fits_now,
    in_queue_order,
    jobs_for_pool,
    pending_for_pool,
    quota_pools,
)
from scheduler_core.engine.actions.reclaim_attempt import Failures, ReclaimAttempt, failure_key
from scheduler_core.engine.actions.reclaim_index import ReclaimIndex
from scheduler_core.engine.actions.reserve import waits_for_hold
from scheduler_core.engine.actions.room_waits import RoomWaits
from scheduler_core.engine.framework.session import Session, Vec
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.resources import EPSILON

RECLAIM_PACED = "reclaim continues in the next scheduling cycle"
"""Added to the reason of a workload that reclaim did not get to because it reached
the pool's max_reclaims_per_cycle."""


def reclaim(session: Session) -> None:
    """Give queues their fairshare back, least disruptively."""
    for pool in quota_pools(session, flag="preemption"):
        jobs = jobs_for_pool(session, pool.name)
        if not jobs:
            continue
        failed: Failures = {}
        budget = Budget(pool.config.max_reclaims_per_cycle)
        index = ReclaimIndex(pool.name)
        config = pool.config
        waits = (
            # every waiting workload's wait counts, those parked behind alike ones too
            RoomWaits(
                session,
                pool.name,
                pending_for_pool(session, pool.name, with_parked=True),
                config.reclaim_lost_work_ratio,
            )
            if config.reclaim_weighs_lost_work
            else None
        )
        in_queue_order(
            session,
            pool.name,
            jobs,
            partial(
                _attempt,
                session,
                pool,
                index=index,
                failed=failed,
                budget=budget,
                waits=waits,
            ),
            extra_of=partial(asked_request, session),
            viable=partial(_within_fairshare, session, pool.name),
            skip=partial(_explain_over_fairshare, session, pool),
            frozen=budget.spent,
        )


def _within_fairshare(session: Session, pool: str, w: WorkloadState) -> bool:
    """Would the project of `w` stay within its fairshare with what `w` asks for?"""
    return session.alike(
        ("within fairshare", pool, *ask_kind(w)),
        lambda: not session.over_fairshare(w.project, pool, asked_request(session, w)),
    )


def _explain_over_fairshare(session: Session, pool: PoolIndex, w: WorkloadState) -> None:
    """What _attempt does for a workload whose project is over its fairshare with it
    (see _within_fairshare): say why it waits."""
    if w.failed:
        return
    reason = session.alike(
        ("over fairshare", pool.name, *ask_kind(w)), partial(_over_fairshare, session, pool, w)
    )
    if reason is not None:
        session.add_reason(w, pool.name, *reason)


def _over_fairshare(session: Session, pool: PoolIndex, w: WorkloadState) -> tuple[str, str] | None:
    """Why the project of `w` may not reclaim for it: its fairshare, or what keeps it
    from being admitted (None for a pending workload: allocate gave that reason)."""
    extra = asked_request(session, w)
    problem = session.admission_problem(w, pool.name, extra)
    if problem is not None:
        return problem if w.pods else None
    return ("fairshare", session.fairshare_blocked(w.project, "project", pool.name, extra))


def _attempt(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    index: ReclaimIndex,
    failed: Failures,
    budget: Budget,
    waits: RoomWaits | None,
) -> None:
    if w.failed:
        return
    counts, extra = asked(session, w)
    if _answered_without_victims(session, pool, w, counts, extra, failed, budget):
        return
    if ReclaimAttempt(session, pool, w, counts, extra, waits).run(index, failed):
        budget.use()


def _answered_without_victims(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    counts: dict[str, int],
    extra: Vec,
    failed: Failures,
    budget: Budget,
) -> bool:
    """Is `w` done with before any victim is looked at (not admitted, placed without
    taking anything, waiting for held nodes, over its fairshare, a failure already
    known for as much, the pool's reclaims for this cycle spent)? Gives its reason."""
    name = pool.name
    problem = session.admission_problem(w, name, extra)
    if problem is not None:
        if w.pods:  # a pending workload has allocate's reason
            session.set_reason(w, name, *problem)
        return True
    if w.pods and fits_now(session, pool, w, counts):
        return True  # expand gives it its next pod without taking anything
    if waits_for_hold(session, pool, w, counts):
        return True
    if session.over_fairshare(w.project, name, extra):
        session.add_reason(
            w, name, "fairshare", session.fairshare_blocked(w.project, "project", name, extra)
        )
        return True
    known = failed.get(failure_key(w))
    if known is not None and extra[0] >= known[0] - EPSILON:
        session.set_reason(w, name, *known[1])
        return True
    if budget.spent():
        session.add_reason(
            w, name, "capacity", f"{RECLAIM_PACED} ({budget.limit} per cycle in pool {name})"
        )
        return True
    return False
