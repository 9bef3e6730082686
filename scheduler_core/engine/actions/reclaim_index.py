"""The reclaim index: per pool, the queues that may give resources back to a reclaimer
and their victims, kept up to date lazily from the queues touched since the last look;
and the order in which reclaim takes their victims (victims_by_queue). Used by the
reclaim action only."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from scheduler_core.engine.resources import EPSILON

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState


class ReclaimEntry:
    """A queue that may give something back in a pool, as of the last look: its
    department, the most GPUs it could give back (`spare`, see most_given), whether it is
    over its fairshare, whether it could give anything at all to a reclaimer within its
    deserved quota (`gives_to_deserved`), and its preemptible running
    workloads in victim order (`victims`, the elastic ones also in `elastic`).
    `seq` orders entries by when they were (re)indexed."""

    __slots__ = (
        "department",
        "elastic",
        "gives_to_deserved",
        "keyed",
        "over_fair",
        "queue",
        "seq",
        "spare",
        "victims",
    )

    def __init__(
        self,
        queue: str,
        department: str,
        spare: float,
        over_fair: bool,
        gives_to_deserved: bool,
        victims: list[WorkloadState],
    ) -> None:
        self.queue = queue
        self.department = department
        self.spare = spare
        self.over_fair = over_fair
        self.gives_to_deserved = gives_to_deserved
        self.victims = victims
        self.elastic = [v for v in victims if v.elastic]
        self.seq = 0
        # victims with their merge keys (see keyed_victims), made when needed
        self.keyed: list[tuple[int, tuple[float, ...], int, WorkloadState]] | None = None

    def keyed_victims(
        self, session: Session
    ) -> list[tuple[int, tuple[float, ...], int, WorkloadState]]:
        """The victims as (tier, victim order, index order, victim): queues over their
        fairshare give first (tier 0), those only over deserved quota next."""
        found = self.keyed
        if found is None:
            tier = 0 if self.over_fair else 1
            found = self.keyed = [(tier, session.victim_key(v), self.seq, v) for v in self.victims]
        return found


def most_given(above: float, victims: list[WorkloadState]) -> float:
    """The most GPUs a queue holding `above` GPUs over its deserved quota could give
    back: each victim is judged on what the queue holds before it is taken, so the
    last one taken may straddle the deserved line and is taken whole (at most the
    largest victim beyond `above`), and never more than its victims hold."""
    held = 0.0
    largest = 0.0
    for v in victims:
        gpus = v.allocated()[0]
        held += gpus
        largest = max(largest, gpus)
    return min(held, above + largest)


def entry_seq(entry: ReclaimEntry) -> int:
    """Sort key: index order."""
    return entry.seq


class ReclaimIndex:
    """Per pool: the queues that may give something back, kept up to date lazily from
    the queues touched since the last look, grouped by department, with the GPUs they
    could give (see most_given) summed overall and per department, and
    whether each department could give anything (cached until one of its queues is
    touched)."""

    __slots__ = (
        "built",
        "by_department",
        "department_gives",
        "entries",
        "pool",
        "seq",
        "spare_des",
        "spare_fair",
    )

    def __init__(self, pool: str) -> None:
        self.pool = pool
        # built on first use (refresh), from every queue running in the pool
        self.built = False
        # queue -> entry, in the order the queues were last (re)indexed
        self.entries: dict[str, ReclaimEntry] = {}
        # department -> its queues' entries, in the same order
        self.by_department: dict[str, dict[str, ReclaimEntry]] = {}
        # (department, victims may go down to deserved quota) -> could it give anything
        self.department_gives: dict[tuple[str, bool], bool] = {}
        self.seq = 0
        # totals of spare GPUs: [overall, per department], for queues over fairshare
        # and for queues only over deserved quota
        self.spare_fair: dict[str, float] = {}
        self.spare_des: dict[str, float] = {}

    def touched(self, department: str) -> None:
        """A queue of `department` changed: forget what was cached about it."""
        self.department_gives.pop((department, False), None)
        self.department_gives.pop((department, True), None)

    def remove(self, queue: str) -> None:
        """Forget `queue` (and take its spare out of the totals)."""
        old = self.entries.pop(queue, None)
        if old is None:
            return
        del self.by_department[old.department][queue]
        totals = self.spare_fair if old.over_fair else self.spare_des
        totals[""] -= old.spare
        totals[old.department] -= old.spare

    def add(self, entry: ReclaimEntry) -> None:
        """Record `entry.queue` as able to give back `entry.spare` GPUs."""
        self.seq += 1
        entry.seq = self.seq
        self.entries[entry.queue] = entry
        self.by_department.setdefault(entry.department, {})[entry.queue] = entry
        totals = self.spare_fair if entry.over_fair else self.spare_des
        totals[""] = totals.get("", 0.0) + entry.spare
        totals[entry.department] = totals.get(entry.department, 0.0) + entry.spare

    def refresh(self, session: Session) -> None:
        """Bring the index up to date: built from every queue running in the pool the
        first time, then re-indexing only the queues touched since the last look."""
        pool = self.pool
        touched = session.take_touched_queues(pool)
        if self.built:
            keys = list(touched)
        else:
            self.built = True
            keys = [key for key in session.running_by_queue if key[1] == pool]
        for key in keys:
            department = touched.get(key)
            if department is not None:
                self.touched(department)
            queue = key[0]
            self.remove(queue)
            if not session.running_by_queue.get(key):
                continue
            over_fair = session.above_fairshare(queue, pool)
            if not over_fair and session.within_deserved(queue, pool, [EPSILON * 10, 0.0, 0.0]):
                continue
            victims = session.queue_victims(queue, pool)
            if not victims:
                continue
            spare = most_given(session.spare_gpus(queue, pool), victims)
            gives = over_fair or session.could_give_back(queue, pool, True)
            self.add(ReclaimEntry(queue, victims[0].department, spare, over_fair, gives, victims))

    def department_gives_back(self, session: Session, department: str, deserved_mode: bool) -> bool:
        """Could `department` give anything back (Session.could_give_back), cached until
        one of its queues is touched."""
        key = (department, deserved_mode)
        gives = self.department_gives.get(key)
        if gives is None:
            gives = self.department_gives[key] = session.could_give_back(
                department, self.pool, deserved_mode
            )
        return gives


def victims_by_queue(
    session: Session, pool: str, entries: list[ReclaimEntry]
) -> Iterator[WorkloadState]:
    """The victims of `entries` queue by queue, as KAI-Scheduler takes them: the next
    victim comes from the department that gives first, then from its project that
    gives first (Session.victim_queue_key: judged on what they hold after the
    evictions so far, without that project's next victim), in its project's victim
    order; earlier entries first on exact ties. Consumed lazily: a victim yielded is
    evicted (or turned down) before the next is asked for, and only its queue's
    figures change, so only its project and department are weighed again."""
    cursors = [0] * len(entries)

    def next_victim(n: int) -> WorkloadState | None:
        victims = entries[n].victims
        i = cursors[n]
        while i < len(victims) and not victims[i].pods:
            i += 1
        cursors[n] = i
        return victims[i] if i < len(victims) else None

    def project_item(n: int) -> tuple[tuple[object, ...], int, WorkloadState] | None:
        v = next_victim(n)
        if v is None:
            return None
        return (session.victim_queue_key(entries[n].queue, pool, v.allocated()), n, v)

    projects: dict[str, list[tuple[tuple[object, ...], int, WorkloadState]]] = {}
    for n, entry in enumerate(entries):
        item = project_item(n)
        if item is not None:
            heapq.heappush(projects.setdefault(entry.department, []), item)

    def department_item(department: str) -> tuple[tuple[object, ...], int, str] | None:
        heap = projects[department]
        if not heap:
            return None
        _, n, v = heap[0]
        return (session.victim_queue_key(department, pool, v.allocated()), n, department)

    departments = [item for item in map(department_item, projects) if item is not None]
    heapq.heapify(departments)
    while departments:
        _, _, department = heapq.heappop(departments)
        heap = projects[department]
        _, n, victim = heapq.heappop(heap)
        cursors[n] += 1
        yield victim
        item = project_item(n)
        if item is not None:
            heapq.heappush(heap, item)
        again = department_item(department)
        if again is not None:
            heapq.heappush(departments, again)
