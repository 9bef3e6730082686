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

import heapq
import math
from collections.abc import Iterable
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
from scheduler_core.engine.actions.reclaim_index import (
    ReclaimEntry,
    ReclaimIndex,
    entry_seq,
    victims_by_queue,
)
from scheduler_core.engine.actions.reserve import waits_for_hold
from scheduler_core.engine.actions.room_waits import RoomWaits
from scheduler_core.engine.decisions import EVICT_RECLAIM
from scheduler_core.engine.framework.session import Session, Vec
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.lost_work import lost_gpu_seconds
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.reasons import format_time
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
        failed: dict[tuple[object, ...], tuple[float, tuple[str, str]]] = {}
        budget = Budget(pool.config.max_reclaims_per_cycle)
        index = ReclaimIndex(pool.name)
        config = pool.config
        waits = (
            RoomWaits(session, pool.name, jobs, config.reclaim_lost_work_ratio)
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
    failed: dict[tuple[object, ...], tuple[float, tuple[str, str]]],
    budget: Budget,
    waits: RoomWaits | None,
) -> None:
    if w.failed:
        return
    counts, extra = asked(session, w)
    name = pool.name
    problem = session.admission_problem(w, name, extra)
    if problem is not None:
        if w.pods:  # a pending workload has allocate's reason
            session.set_reason(w, name, *problem)
        return
    if w.pods and fits_now(session, pool, w, counts):
        return  # expand gives it its next pod without taking anything
    if waits_for_hold(session, pool, w, counts):
        return
    if session.over_fairshare(w.project, name, extra):
        session.add_reason(
            w, name, "fairshare", session.fairshare_blocked(w.project, "project", name, extra)
        )
        return
    # failing is monotone within this action (reclaims only use up what others give
    # back), so a queue that could not reclaim g GPUs will not reclaim g or more later
    sig = (w.project, tuple(sorted(w.selector.items())))
    known = failed.get(sig)
    if known is not None and extra[0] >= known[0] - EPSILON:
        session.set_reason(w, name, *known[1])
        return
    if budget.spent():
        session.add_reason(
            w, name, "capacity", f"{RECLAIM_PACED} ({budget.limit} per cycle in pool {name})"
        )
        return
    # the reclaiming side (FORMAT v1.2): the department too must end within its
    # fairshare, counting what the victims of its own projects give back
    dept_within = not session.over_fairshare(w.department, name, extra)
    proj_deserved = session.within_deserved(w.project, name, extra)
    dept_deserved = session.within_deserved(w.department, name, extra)
    index.refresh(session)
    room = pool.free_gpus + index.spare_fair.get("", 0.0)
    if proj_deserved:
        room += index.spare_des.get("", 0.0)
    own = index.entries.get(w.project)
    own_spare = own.spare if own is not None and (own.over_fair or proj_deserved) else 0.0
    room -= own_spare
    if not dept_within:
        # what the department's own projects could give back at most must cover what it
        # would hold over its fairshare (a necessary condition, on GPUs)
        given = index.spare_fair.get(w.department, 0.0) - own_spare
        if proj_deserved:
            given += index.spare_des.get(w.department, 0.0)
        if given + EPSILON < session.over_fairshare_by(w.department, name, extra):
            room = -math.inf
    # victim lists of the queues that may be reclaimed from, in index order; queues
    # (or whole departments) that cannot give anything back are left out, since
    # `allowed` would turn down every one of their victims (allocations only go down
    # while an attempt evicts, so that verdict holds for the whole attempt)
    lists: list[list[WorkloadState]] = []
    elastic: list[WorkloadState] = []
    entries: list[ReclaimEntry] = []
    # a department over its fairshare with the request needs projects of its own that
    # may give back enough
    eligible = dept_within
    if room + EPSILON >= extra[0]:
        found: list[ReclaimEntry] = []
        for department, members in index.by_department.items():
            if members and (
                department == w.department
                or index.department_gives_back(session, department, dept_deserved)
            ):
                found.extend(members.values())
        found.sort(key=entry_seq)
        for entry in found:
            queue = entry.queue
            if queue == w.project:
                continue
            over_fair = entry.over_fair
            if not over_fair and not proj_deserved:
                continue
            eligible = eligible or entry.department == w.department
            if not (over_fair or entry.gives_to_deserved):
                continue
            entries.append(entry)
            lists.append(entry.victims)
            elastic.extend(entry.elastic)
    if not eligible:
        reason = (
            "fairshare",
            session.fairshare_blocked(w.department, "department", name, extra),
        )
        failed[sig] = (extra[0], reason)
        session.add_reason(w, name, *reason)
        return
    candidates: Iterable[WorkloadState]
    if waits is None:
        candidates = victims_by_queue(session, name, entries)
    else:
        # a pool that weighs lost work takes, among the victims of every queue that
        # may give, the lowest priority and then the most recently started first
        merged = heapq.merge(*(e.keyed_victims(session) for e in entries))
        candidates = (item[-1] for item in merged)
    protected: list[tuple[float, WorkloadState]] = []
    department = w.department
    # victim id -> why it may be taken although that drops its queue below deserved
    straddled: dict[str, str] = {}
    # in a pool that weighs lost work, the runs evicted may throw away no more GPU-time
    # than the reclaiming queue's waiting workloads have waited and not spent yet
    allowance = math.inf if waits is None else waits.allowance(w.project)
    # the runs taken so far and what each throws away (also those put back later)
    charged: list[tuple[VictimStep, float]] = []
    charged_total = 0.0
    # runs turned down for their cost: (all the runs taken so far with it, its own, it)
    costly: list[tuple[float, float, WorkloadState]] = []

    def allowed(step: VictimStep) -> bool:
        nonlocal charged_total
        v = step.victim
        freed = step.freed()
        given = (freed[0], freed[1], freed[2])
        if not session.may_give_back(v.project, name, given, proj_deserved):
            return False
        other_department = v.department != department
        if other_department and not session.may_give_back(v.department, name, given, dept_deserved):
            return False
        if step.pod is None:
            until = session.protection(v)
            if until is not None:
                protected.append((until, v))
                return False
        if not math.isinf(allowance):
            # a whole victim's run, or the run of the one pod an elastic one gives up
            lost = lost_gpu_seconds(v.spec, session.now, freed[0])
            total = charged_total + lost
            if total > allowance + EPSILON:
                costly.append((total, lost, v))
                return False
            charged.append((step, lost))
            charged_total = total
        note = session.straddle_reason(v.project, "project", name, given)
        if note is None and other_department:
            note = session.straddle_reason(v.department, "department", name, given)
        if note is not None:
            straddled[v.id] = note
        else:
            straddled.pop(v.id, None)
        return True

    def reason_for(v: WorkloadState) -> str:
        note = straddled.get(v.id)
        return f"reclaimed by {w.project}" if note is None else f"reclaimed by {w.project}: {note}"

    stmt = session.statement()
    placed = False
    if room + EPSILON >= extra[0]:
        placed = free_and_place(
            session,
            stmt,
            w,
            pool,
            counts,
            candidates,
            allowed,
            EVICT_RECLAIM,
            reason_for,
            elastic,
            admits=partial(_stays_within_fairshare, session, name, w),
        )
    if placed:
        stmt.commit()
        budget.use()
        if waits is not None:
            # what this reclaim threw away (victims put back lost nothing) is paid for
            # with its queue's wait, which no later reclaim spends again
            waits.pay(w, sum(lost for step, lost in charged if _stopped(step)))
        return
    stmt.discard()
    protected.clear()
    for victims in lists:
        for v in victims:
            if session.protection(v) is not None:
                allowed(VictimStep(v))  # only to note who is protected, and until when
    if protected:
        until, v = min(protected, key=lambda t: (t[0], t[1].spec.creation_order))
        reason = ("min_runtime", _protected(session, name, v, until))
    elif costly:
        total, lost, v = min(costly, key=lambda t: (t[0], t[1], t[2].spec.creation_order))
        message = _too_costly(pool, w, counts, v, lost, total, allowance)
        session.set_reason(w, name, "capacity", message)
        return  # not cached: another workload of the queue may have waited longer
    else:
        reason = (
            "capacity",
            f"{describe_misfit(pool, w, counts)}, and no other queue is over its fair share "
            f"by enough to give it back",
        )
    failed[sig] = (extra[0], reason)
    session.set_reason(w, name, *reason)


def _stays_within_fairshare(
    session: Session, pool: str, reclaimer: WorkloadState, x: WorkloadState, more: Vec
) -> bool:
    """The reclaiming side (FORMAT v1.2): may `x` take `more` as things stand (the chosen
    victims evicted)? The reclaimer itself, or a victim put back: every queue on the
    reclaimer's path (its project, then its department) that holds `x` must stay within
    its fairshare, so what the victims inside a queue's own subtree give back counts for
    it, and nothing else does."""
    for queue in (reclaimer.project, reclaimer.department):
        inside = x is reclaimer or queue in (x.project, x.department)
        if inside and session.over_fairshare(queue, pool, more):
            return False
    return True


def _protected(session: Session, pool: str, v: WorkloadState, until: float) -> str:
    """Why a workload waits for a victim that may not be evicted (see session.protection)."""
    if math.isinf(until):
        n = v.spec.preemptions
        times = "once" if n == 1 else f"{n} times"
        return (
            f"waiting for {v.name} to end: it has been preempted {times}, the most pool {pool} "
            f"allows (max_preemptions_per_workload), so it runs to its end"
        )
    return f"waiting for {v.name}'s guaranteed runtime until {format_time(until, session.now)}"


def _stopped(step: VictimStep) -> bool:
    """Did the run `step` took stay stopped (free_and_place puts back victims it turned
    out not to need)?"""
    pods = step.victim.pods
    return not pods if step.pod is None else step.pod not in pods


def _too_costly(
    pool: PoolIndex,
    w: WorkloadState,
    counts: dict[str, int],
    v: WorkloadState,
    lost: float,
    total: float,
    allowance: float,
) -> str:
    """Why a workload waits rather than reclaim, in a pool that weighs lost work: the
    GPU-hours the runs it would take throw away (`total`, `lost` of them `v`'s, the run
    that tipped it over its queue's wait)."""
    if total - lost > EPSILON:
        cost = (
            f"reclaiming room would throw away {total / 3600:.1f} GPU-hours of runs, "
            f"{lost / 3600:.1f} of them {v.name}'s ({v.project})"
        )
    else:
        cost = (
            f"reclaiming from {v.project} would throw away {lost / 3600:.1f} GPU-hours "
            f"of {v.name}'s run"
        )
    return (
        f"{describe_misfit(pool, w, counts)}; {cost}, more than {w.project}'s waiting "
        f"workloads within its fairshare have waited for room and not yet spent on reclaims "
        f"({allowance / 3600:.1f} GPU-hours), so it waits for GPUs to free (pool "
        f"{pool.name} weighs lost work)"
    )
