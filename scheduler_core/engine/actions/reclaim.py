"""Reclaim: a queue within its fairshare (after the allocation) takes resources back
from queues over their fairshare, and a queue within its deserved quota from queues
over their deserved quota; victims never drop below their deserved quota, across
departments the departments are compared too. Elastic victims shrink first."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from functools import partial

from scheduler_core.engine.actions.common import (
    Budget,
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
from scheduler_core.engine.session import ReclaimEntry, ReclaimIndex, Session, Vec, entry_seq
from scheduler_core.engine.state import PoolIndex, WorkloadState

RECLAIM_PACED = "reclaim continues in the next scheduling cycle"
"""Added to the reason of a workload that reclaim did not get to because it reached
the pool's max_reclaims_per_cycle."""


def reclaim(session: Session) -> None:
    """Give queues their fairshare back, least disruptively."""
    for pool in quota_pools(session, flag="preemption"):
        jobs = pending_for_pool(session, pool.name)
        if not jobs:
            continue
        failed: dict[tuple[object, ...], tuple[float, tuple[str, str]]] = {}
        budget = Budget(pool.config.max_reclaims_per_cycle)
        in_queue_order(
            session,
            pool.name,
            jobs,
            partial(_attempt, session, pool, failed=failed, budget=budget),
            viable=partial(_within_fairshare, session, pool.name),
            skip=partial(_explain_over_fairshare, session, pool),
            frozen=budget.spent,
        )


def _within_fairshare(session: Session, pool: str, w: WorkloadState) -> bool:
    """Would the project of `w` stay within its fairshare with the gang of `w`?"""
    return session.alike(
        ("within fairshare", pool, w.kind_key),
        lambda: not session.over_fairshare(w.project, pool, gang_request(session, w)),
    )


def _index(session: Session, pool: str) -> ReclaimIndex:
    """The reclaim index of `pool`, refreshed for the queues touched since last time."""
    index = session.reclaim_index.get(pool)
    if index is None:
        index = session.reclaim_index[pool] = ReclaimIndex()
        touched = [key for key in session.running_by_queue if key[1] == pool]
    else:
        touched = [key for key in session.dirty_queues if key[1] == pool]
    for key in touched:
        department = session.dirty_queues.pop(key, None)
        if department is not None:
            index.touched(department)
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
        gives = over_fair or _may_give(session, queue, pool, True)
        index.add(ReclaimEntry(queue, victims[0].department, spare, over_fair, gives, victims))
    return index


def _queue_vectors(session: Session, queue: str, pool: str) -> tuple[Vec, Vec, Vec]:
    """(allocated, fairshare, deserved) of `queue` in `pool`; the allocated vector is
    the session's own, so it stays current."""
    key = (queue, pool)
    return (
        session.acc.get(key, [0.0, 0.0, 0.0]),
        session.fair.get(key, [0.0, 0.0, 0.0]),
        session.deserved.get(key, [0.0, math.inf, math.inf]),
    )


def _queue_over(
    vectors: tuple[Vec, Vec, Vec], freed: tuple[float, float, float], deserved_mode: bool
) -> bool:
    """May a queue with these (allocated, fairshare, deserved) vectors give `freed`
    back: it stays at or above its deserved quota and is over its fairshare (or, in
    deserved mode, over its deserved quota) on a resource it gives?"""
    acc, fair, des = vectors
    over = False
    for i in range(3):
        if freed[i] <= EPSILON or not math.isfinite(des[i]):
            continue
        if acc[i] - freed[i] < des[i] - EPSILON:
            return False  # never below deserved
        if acc[i] > fair[i] + EPSILON or (deserved_mode and acc[i] > des[i] + EPSILON):
            over = True
    return over


def _may_give(session: Session, queue: str, pool: str, deserved_mode: bool) -> bool:
    """Could `queue` give anything back at all (see _queue_over)? False stays False
    while an attempt only evicts, since allocations then only go down."""
    key = (queue, pool)
    acc = session.acc.get(key, [0.0, 0.0, 0.0])
    fair = session.fair.get(key, [0.0, 0.0, 0.0])
    des = session.deserved.get(key, [0.0, math.inf, math.inf])
    for i in range(3):
        if not math.isfinite(des[i]):
            continue
        if acc[i] > fair[i] + EPSILON or (deserved_mode and acc[i] > des[i] + EPSILON):
            return True
    return False


def keyed(
    session: Session, entry: ReclaimEntry
) -> list[tuple[int, tuple[float, ...], int, WorkloadState]]:
    """The victims of `entry` as (tier, victim order, index order, victim): queues
    over their fairshare give first (tier 0), those only over deserved quota next."""
    found = entry.keyed
    if found is None:
        tier = 0 if entry.over_fair else 1
        found = entry.keyed = [(tier, victim_key(session, v), entry.seq, v) for v in entry.victims]
    return found


def _department_gives(
    session: Session, index: ReclaimIndex, department: str, pool: str, deserved_mode: bool
) -> bool:
    """_may_give for a department, cached in the index until one of its queues changes."""
    key = (department, deserved_mode)
    gives = index.department_gives.get(key)
    if gives is None:
        gives = index.department_gives[key] = _may_give(session, department, pool, deserved_mode)
    return gives


def _explain_over_fairshare(session: Session, pool: PoolIndex, w: WorkloadState) -> None:
    """What _attempt does for a workload whose project is over its fairshare with it
    (see _within_fairshare): say so, unless its admission is the problem."""
    if w.pods or w.failed:
        return
    text = session.alike(
        ("over fairshare", pool.name, w.kind_key), partial(_over_fairshare, session, pool, w)
    )
    if text is not None:
        session.add_reason(w, pool.name, "fairshare", text)


def _over_fairshare(session: Session, pool: PoolIndex, w: WorkloadState) -> str | None:
    """Why the project of `w` may not reclaim for it (None: its admission is the problem,
    and that reason stands)."""
    extra = gang_request(session, w)
    if session.admission_problem(w, pool.name, extra) is not None:
        return None
    return fairshare_blocked(session, w, w.project, "project", pool.name, extra)


def _attempt(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    failed: dict[tuple[object, ...], tuple[float, tuple[str, str]]],
    budget: Budget,
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
    # across departments the departments are compared as well
    dept_within = not session.over_fairshare(w.department, name, extra)
    proj_deserved = session.within_deserved(w.project, name, extra)
    dept_deserved = session.within_deserved(w.department, name, extra)
    index = _index(session, name)
    scope = "" if dept_within else w.department
    room = pool.free_gpus + index.spare_fair.get(scope, 0.0)
    if proj_deserved:
        room += index.spare_des.get(scope, 0.0)
    own = index.entries.get(w.project)
    if own is not None and (own.over_fair or proj_deserved):
        room -= own.spare
    # victim lists of the queues that may be reclaimed from, in index order; queues
    # (or whole departments) that cannot give anything back are left out, since
    # `allowed` would turn down every one of their victims (allocations only go down
    # while an attempt evicts, so that verdict holds for the whole attempt)
    lists: list[list[WorkloadState]] = []
    elastic: list[WorkloadState] = []
    entries: list[ReclaimEntry] = []
    eligible = False
    if room + EPSILON >= extra[0]:
        ordered: Iterable[ReclaimEntry]
        if dept_within:
            found: list[ReclaimEntry] = []
            for department, members in index.by_department.items():
                if members and (
                    department == w.department
                    or _department_gives(session, index, department, name, dept_deserved)
                ):
                    found.extend(members.values())
            found.sort(key=entry_seq)
            ordered = found
        else:
            ordered = index.by_department.get(w.department, {}).values()
        for entry in ordered:
            queue = entry.queue
            if queue == w.project:
                continue
            over_fair = entry.over_fair
            if not over_fair and not proj_deserved:
                continue
            eligible = True
            if not (over_fair or entry.gives_to_deserved):
                continue
            entries.append(entry)
            lists.append(entry.victims)
            elastic.extend(entry.elastic)
    if not eligible and not dept_within:
        reason = (
            "fairshare",
            fairshare_blocked(session, w, w.department, "department", name, extra),
        )
        failed[sig] = (extra[0], reason)
        session.add_reason(w, name, *reason)
        return
    # victims of every list in (tier, victim order), earlier lists first on ties
    candidates = (item[-1] for item in heapq.merge(*(keyed(session, e) for e in entries)))
    protected: list[tuple[float, WorkloadState]] = []
    vectors: dict[str, tuple[Vec, Vec, Vec]] = {}
    department = w.department

    def allowed(step: VictimStep) -> bool:
        v = step.victim
        pod = step.pod
        if pod is None:
            freed = v.allocated()
        else:
            grp = v.group_map[pod.group]
            freed = (grp.gpus, grp.cpu, grp.memory)
        project_vectors = vectors.get(v.project)
        if project_vectors is None:
            project_vectors = vectors[v.project] = _queue_vectors(session, v.project, name)
        if not _queue_over(project_vectors, freed, proj_deserved):
            return False
        if v.department != department:
            dept_vectors = vectors.get(v.department)
            if dept_vectors is None:
                dept_vectors = vectors[v.department] = _queue_vectors(session, v.department, name)
            if not _queue_over(dept_vectors, freed, dept_deserved):
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
        budget.use()
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
            f"waiting for {v.name}'s guaranteed runtime until {format_time(until, session.now)}",
        )
    else:
        reason = (
            "capacity",
            f"{describe_misfit(pool, w, counts)}, and no other queue is over its fair share "
            f"by enough to give it back",
        )
    failed[sig] = (extra[0], reason)
    session.set_reason(w, name, *reason)
