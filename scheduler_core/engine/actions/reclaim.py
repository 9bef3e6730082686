"""Reclaim: a queue within its fairshare (after the allocation) takes resources back
from queues over their fairshare, and a queue within its deserved quota from queues
over their deserved quota; victims never drop below their deserved quota, across
departments the departments are compared too. Elastic victims shrink first."""

from __future__ import annotations

import heapq
import math
from functools import partial

from scheduler_core.engine.actions.common import (
    VictimStep,
    free_and_place,
    gang_counts,
    gang_request,
    in_queue_order,
    pending_for_pool,
    queue_victims,
    quota_pools,
    victim_key,
)
from scheduler_core.engine.decisions import EVICT_RECLAIM
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.reasons import fairshare_blocked, format_time
from scheduler_core.engine.resources import EPSILON
from scheduler_core.engine.session import ReclaimIndex, Session, Vec
from scheduler_core.engine.state import PoolIndex, WorkloadState


def reclaim(session: Session) -> None:
    """Give queues their fairshare back, least disruptively."""
    for pool in quota_pools(session, flag="preemption"):
        jobs = pending_for_pool(session, pool.name)
        if not jobs:
            continue
        failed: dict[tuple[object, ...], tuple[float, tuple[str, str]]] = {}
        in_queue_order(
            session,
            pool.name,
            jobs,
            partial(_attempt, session, pool, failed=failed),
            viable=partial(_within_fairshare, session, pool.name),
            skip=partial(_attempt, session, pool, failed=failed),
        )


def _within_fairshare(session: Session, pool: str, w: WorkloadState) -> bool:
    """Would the project of `w` stay within its fairshare with the gang of `w`?"""
    return not session.over_fairshare(w.project, pool, gang_request(session, w))


def _index(session: Session, pool: str) -> ReclaimIndex:
    """The reclaim index of `pool`, refreshed for the queues touched since last time."""
    index = session.reclaim_index.get(pool)
    if index is None:
        index = session.reclaim_index[pool] = ReclaimIndex()
        touched = [key for key in session.running_by_queue if key[1] == pool]
    else:
        touched = [key for key in session.dirty_queues if key[1] == pool]
    for key in touched:
        session.dirty_queues.discard(key)
        queue = key[0]
        index.remove(queue)
        if not session.running_by_queue.get(key):
            continue
        over_fair = session.above_fairshare(queue, pool)
        if not over_fair and session.within_deserved(queue, pool, [EPSILON * 10, 0.0, 0.0]):
            continue
        victims = queue_victims(session, queue, pool)
        if not victims:
            continue
        acc = session.acc[key][0]
        spare = max(0.0, acc - min(session.deserved[key][0], acc))
        index.add(queue, victims[0].department, spare, over_fair, victims)
    return index


def _queue_over(session: Session, queue: str, pool: str, freed: Vec, deserved_mode: bool) -> bool:
    key = (queue, pool)
    acc = session.acc.get(key, [0.0, 0.0, 0.0])
    fair = session.fair.get(key, [0.0, 0.0, 0.0])
    des = session.deserved.get(key, [0.0, math.inf, math.inf])
    over = False
    for i in range(3):
        if freed[i] <= EPSILON or not math.isfinite(des[i]):
            continue
        if acc[i] - freed[i] < des[i] - EPSILON:
            return False  # never below deserved
        if acc[i] > fair[i] + EPSILON or (deserved_mode and acc[i] > des[i] + EPSILON):
            over = True
    return over


def _attempt(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    failed: dict[tuple[object, ...], tuple[float, tuple[str, str]]],
) -> None:
    if w.pods or w.failed:
        return
    counts = gang_counts(session, w)
    extra = gang_request(session, w)
    if session.admission_problem(w, pool.name, extra) is not None:
        return
    name = pool.name
    if session.over_fairshare(w.project, name, extra):
        session.add_reason(
            w, name, "fairshare", fairshare_blocked(session, w, w.project, "project", name, extra)
        )
        return
    # across departments the departments are compared as well
    dept_within = not session.over_fairshare(w.department, name, extra)
    proj_deserved = session.within_deserved(w.project, name, extra)
    dept_deserved = session.within_deserved(w.department, name, extra)
    # failing is monotone within this action (reclaims only use up what others give
    # back), so a queue that could not reclaim g GPUs will not reclaim g or more later
    sig = (w.project, tuple(sorted(w.selector.items())))
    known = failed.get(sig)
    if known is not None and extra[0] >= known[0] - EPSILON:
        session.set_reason(w, name, *known[1])
        return
    index = _index(session, name)
    scope = "" if dept_within else w.department
    room = pool.free_gpus + index.spare_fair.get(scope, 0.0)
    if proj_deserved:
        room += index.spare_des.get(scope, 0.0)
    own = index.entries.get(w.project)
    if own is not None and (own[2] or proj_deserved):
        room -= own[1]
    lists: list[list[WorkloadState]] = []
    tiers: dict[str, int] = {}
    if room + EPSILON >= extra[0]:
        for queue, (department, _, over_fair, victims) in index.entries.items():
            if queue == w.project or (not dept_within and department != w.department):
                continue
            if not over_fair and not proj_deserved:
                continue
            tiers[queue] = 0 if over_fair else 1
            lists.append(victims)
    if not lists and not dept_within:
        reason = (
            "fairshare",
            fairshare_blocked(session, w, w.department, "department", name, extra),
        )
        failed[sig] = (extra[0], reason)
        session.add_reason(w, name, *reason)
        return
    candidates = heapq.merge(*lists, key=lambda v: (tiers[v.project], victim_key(session, v)))
    elastic = [v for victims in lists for v in victims if v.elastic]
    protected: list[tuple[float, WorkloadState]] = []

    def allowed(step: VictimStep) -> bool:
        v = step.victim
        freed = step.freed()
        if not _queue_over(session, v.project, name, freed, proj_deserved):
            return False
        if v.department != w.department and not _queue_over(
            session, v.department, name, freed, dept_deserved
        ):
            return False
        if step.pod is None:
            until = session.protection(v)
            if until is not None:
                protected.append((until, v))
                return False
        return True

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
            lambda v: f"reclaimed by {w.project}",
            elastic,
        )
    if placed:
        stmt.commit()
        return
    stmt.discard()
    protected.clear()
    for victims in lists:
        for v in victims:
            if session.protection(v) is not None:
                allowed(VictimStep(v))  # only to note who is protected, and until when
    if protected:
        until, v = min(protected, key=lambda t: (t[0], t[1].spec.creation_order))
        reason = (
            "min_runtime",
            f"waiting for {v.name}'s guaranteed runtime until {format_time(until)}",
        )
    else:
        reason = (
            "capacity",
            f"{describe_misfit(pool, w, counts)}, and no other queue is over its fair share "
            f"by enough to give it back",
        )
    failed[sig] = (extra[0], reason)
    session.set_reason(w, name, *reason)
