"""One reclaim attempt (actions/reclaim.py): a pending workload whose queue stays within
its fairshare with it takes room back from queues that may give, or learns why not.

The attempt is judged in steps, each a method of ReclaimAttempt: the room the queues
that may give could free at most (`room`), the queues whose victims may be taken
(`giving_entries`), each victim as it is taken (`allowed`: what its queue and department
keep, its guaranteed runtime, the work it throws away), and, when nothing could be
placed, the reason (`explain_failure`)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from functools import partial

from scheduler_core.engine.actions.common import VictimStep, free_and_place
from scheduler_core.engine.actions.reclaim_index import (
    ReclaimEntry,
    ReclaimIndex,
    entry_seq,
    victims_by_queue,
)
from scheduler_core.engine.actions.room_waits import RoomWaits
from scheduler_core.engine.decisions import EVICT_RECLAIM
from scheduler_core.engine.framework.session import Session, Vec
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.framework.statement import Statement
from scheduler_core.engine.lost_work import lost_gpu_seconds
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.reasons import format_time
from scheduler_core.engine.resources import EPSILON

Failures = dict[tuple[object, ...], tuple[float, tuple[str, str]]]
"""Per (project, selector): the fewest GPUs a reclaim failed for, and the reason given.
Failing is monotone within the action (reclaims only use up what others give back), so
a queue that could not reclaim g GPUs will not reclaim g or more later."""


def failure_key(w: WorkloadState) -> tuple[object, ...]:
    """The key of `w`'s queue and selector in Failures."""
    return (w.project, tuple(sorted(w.selector.items())))


class ReclaimAttempt:
    """Reclaim for `w` in `pool`: `run` evicts and places, or sets why it waits."""

    def __init__(
        self,
        session: Session,
        pool: PoolIndex,
        w: WorkloadState,
        counts: dict[str, int],
        extra: Vec,
        waits: RoomWaits | None,
    ) -> None:
        self.session = session
        self.pool = pool
        self.name = pool.name
        self.w = w
        self.counts = counts
        self.extra = extra
        self.waits = waits
        # the reclaiming side (FORMAT v1.2): the department too must end within its
        # fairshare, counting what the victims of its own projects give back
        self.dept_within = not session.over_fairshare(w.department, pool.name, extra)
        self.proj_deserved = session.within_deserved(w.project, pool.name, extra)
        self.dept_deserved = session.within_deserved(w.department, pool.name, extra)
        # victims turned down for their guaranteed runtime: (until when, victim)
        self.protected: list[tuple[float, WorkloadState]] = []
        # victim id -> why it may be taken although that drops its queue below deserved
        self.straddled: dict[str, str] = {}
        # in a pool that weighs lost work, the runs evicted may throw away no more
        # GPU-time than the reclaiming queue's waiting workloads have waited and not
        # spent yet
        self.allowance = math.inf if waits is None else waits.allowance(w.project)
        # the runs taken so far and what each throws away (also those put back later)
        self.charged: list[tuple[VictimStep, float]] = []
        self.charged_total = 0.0
        # runs turned down for their cost: (all the runs taken so far with it, its own, it)
        self.costly: list[tuple[float, float, WorkloadState]] = []

    # --- what may be taken ------------------------------------------------------------

    def room(self, index: ReclaimIndex) -> float:
        """GPUs the pool could free for `w` at most: free ones and what queues over
        their fairshare (or deserved quota, for a queue within its own) hold beyond it;
        -inf when its department could not end within its fairshare."""
        w = self.w
        room = self.pool.free_gpus + index.spare_fair.get("", 0.0)
        if self.proj_deserved:
            room += index.spare_des.get("", 0.0)
        own = index.entries.get(w.project)
        own_spare = own.spare if own is not None and (own.over_fair or self.proj_deserved) else 0.0
        room -= own_spare
        if not self.dept_within:
            # what the department's own projects could give back at most must cover what
            # it would hold over its fairshare (a necessary condition, on GPUs)
            given = index.spare_fair.get(w.department, 0.0) - own_spare
            if self.proj_deserved:
                given += index.spare_des.get(w.department, 0.0)
            over = self.session.over_fairshare_by(w.department, self.name, self.extra)
            if given + EPSILON < over:
                return -math.inf
        return room

    def giving_entries(self, index: ReclaimIndex) -> tuple[bool, list[ReclaimEntry]]:
        """The queues that may give back, in index order, and whether `w` may reclaim
        at all (a department over its fairshare with the request needs projects of its
        own that may give back enough). Queues (or whole departments) that cannot give
        anything are left out: `allowed` would turn down every victim of theirs, and
        allocations only go down while an attempt evicts, so that holds throughout."""
        w = self.w
        eligible = self.dept_within
        found: list[ReclaimEntry] = []
        for department, members in index.by_department.items():
            if members and (
                department == w.department
                or index.department_gives_back(self.session, department, self.dept_deserved)
            ):
                found.extend(members.values())
        found.sort(key=entry_seq)
        entries: list[ReclaimEntry] = []
        for entry in found:
            if entry.queue == w.project:
                continue
            if not entry.over_fair and not self.proj_deserved:
                continue
            eligible = eligible or entry.department == w.department
            if entry.over_fair or entry.gives_to_deserved:
                entries.append(entry)
        return eligible, entries

    def candidates(self, entries: list[ReclaimEntry]) -> Iterable[WorkloadState]:
        """The victims in the order they are taken: queue by queue (KAI's victim queue
        order), or, in a pool that weighs lost work, the lowest priority and then the
        most recently started of every queue that may give."""
        if self.waits is None:
            return victims_by_queue(self.session, self.name, entries)
        merged = heapq.merge(*(e.keyed_victims(self.session) for e in entries))
        return (item[-1] for item in merged)

    def allowed(self, step: VictimStep) -> bool:
        """May `step` be taken? Its queue and department must keep what they are owed,
        a whole victim its guaranteed runtime, and the work thrown away must stay
        within the allowance. Notes why a victim straddling its deserved line is taken."""
        session, v = self.session, step.victim
        freed = step.freed()
        given = (freed[0], freed[1], freed[2])
        if not session.may_give_back(v.project, self.name, given, self.proj_deserved):
            return False
        other_department = v.department != self.w.department
        if other_department and not session.may_give_back(
            v.department, self.name, given, self.dept_deserved
        ):
            return False
        if step.pod is None:
            until = session.protection(v)
            if until is not None:
                self.protected.append((until, v))
                return False
        if not math.isinf(self.allowance) and not self._charge(step, freed[0]):
            return False
        note = session.straddle_reason(v.project, "project", self.name, given)
        if note is None and other_department:
            note = session.straddle_reason(v.department, "department", self.name, given)
        if note is not None:
            self.straddled[v.id] = note
        else:
            self.straddled.pop(v.id, None)
        return True

    def _charge(self, step: VictimStep, gpus: float) -> bool:
        """Count what taking `step` throws away (a whole victim's run, or the run of the
        one pod an elastic one gives up); False when it would pass the allowance."""
        v = step.victim
        lost = lost_gpu_seconds(v.spec, self.session.now, gpus)
        total = self.charged_total + lost
        if total > self.allowance + EPSILON:
            self.costly.append((total, lost, v))
            return False
        self.charged.append((step, lost))
        self.charged_total = total
        return True

    def reason_for(self, v: WorkloadState) -> str:
        """The eviction reason of victim `v`."""
        note = self.straddled.get(v.id)
        project = self.w.project
        return f"reclaimed by {project}" if note is None else f"reclaimed by {project}: {note}"

    # --- the attempt ------------------------------------------------------------------

    def run(self, index: ReclaimIndex, failed: Failures) -> bool:
        """Evict and place `w`, committed (True), or record why it waits (False)."""
        session, w = self.session, self.w
        index.refresh(session)
        fits = self.room(index) + EPSILON >= self.extra[0]
        eligible, entries = self.giving_entries(index) if fits else (self.dept_within, [])
        if not eligible:
            reason = (
                "fairshare",
                session.fairshare_blocked(w.department, "department", self.name, self.extra),
            )
            failed[failure_key(w)] = (self.extra[0], reason)
            session.add_reason(w, self.name, *reason)
            return False
        stmt = session.statement()
        if fits and self._place(stmt, entries):
            stmt.commit()
            if self.waits is not None:
                # what this reclaim threw away (victims put back lost nothing) is paid
                # for with its queue's wait, which no later reclaim spends again
                self.waits.pay(w, sum(lost for step, lost in self.charged if _stopped(step)))
            return True
        stmt.discard()
        self.explain_failure(entries, failed)
        return False

    def _place(self, stmt: Statement, entries: list[ReclaimEntry]) -> bool:
        elastic = [v for entry in entries for v in entry.elastic]
        return free_and_place(
            self.session,
            stmt,
            self.w,
            self.pool,
            self.counts,
            self.candidates(entries),
            self.allowed,
            EVICT_RECLAIM,
            self.reason_for,
            elastic,
            admits=partial(_stays_within_fairshare, self.session, self.name, self.w),
        )

    def explain_failure(self, entries: list[ReclaimEntry], failed: Failures) -> None:
        """Why `w` could not reclaim: a victim's guaranteed runtime, the work it would
        throw away, or too little over anyone's fair share."""
        session, w, name = self.session, self.w, self.name
        self.protected.clear()
        for entry in entries:
            for v in entry.victims:
                if session.protection(v) is not None:
                    self.allowed(VictimStep(v))  # only to note who is protected, and until
        if self.protected:
            until, v = min(self.protected, key=lambda t: (t[0], t[1].spec.creation_order))
            reason = ("min_runtime", _protected(session, name, v, until))
        elif self.costly:
            total, lost, v = min(self.costly, key=lambda t: (t[0], t[1], t[2].spec.creation_order))
            message = _too_costly(self.pool, w, self.counts, v, lost, total, self.allowance)
            session.set_reason(w, name, "capacity", message)
            return  # not cached: another workload of the queue may have waited longer
        else:
            reason = (
                "capacity",
                f"{describe_misfit(self.pool, w, self.counts)}, and no other queue is over "
                f"its fair share by enough to give it back",
            )
        failed[failure_key(w)] = (self.extra[0], reason)
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
