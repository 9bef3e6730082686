"""Queue order as a tree (FORMAT v1.2, KAI-Scheduler's jobs order by queues): the jobs
of one pool, taken one at a time from the best department, then its best project, then
that project's best job.

Departments are compared only with departments and projects only with the projects of
the same department. A project's key counts its first job (Session.queue_key with what
that job asks for); a department's key counts the candidate it would serve, the first
job of its best project. So two projects of one department are never told apart by
their department's figures.

Keys are re-evaluated lazily: an entry remembers the commit count and the inputs its
key was computed from (Session.queue_key_inputs, plus the candidate for a department),
and is computed again only when it reaches the top after something committed and its
inputs changed. Every step costs O(log) in departments, projects and jobs."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session, Vec
    from scheduler_core.engine.framework.state import WorkloadState

Entry = tuple[tuple[object, ...], int, str, int, object]
"""(key, sequence, queue name, commits when the key was computed, its inputs)."""


class QueueTree:
    """The jobs of `pool` in queue order (see module doc). Within a project, jobs go in
    `job_key` order. `head_ok(w)`, when given, says whether the first job of a project
    may take part in the ordering; jobs it turns down are handed to `turned_down` and
    dropped (the callers' verdicts that hold for the whole action)."""

    def __init__(
        self,
        session: Session,
        pool: str,
        jobs: Iterable[WorkloadState],
        extra_of: Callable[[WorkloadState], Vec],
        job_key: Callable[[WorkloadState], tuple[object, ...]],
        head_ok: Callable[[str, WorkloadState], bool] | None = None,
        turned_down: Callable[[WorkloadState], None] | None = None,
    ) -> None:
        self._session = session
        self._pool = pool
        self._extra_of = extra_of
        self._job_key = job_key
        self._head_ok = head_ok
        self._turned_down = turned_down
        self._seq = 0
        self._jobs: dict[str, list[tuple[tuple[object, ...], int, WorkloadState]]] = {}
        self._department: dict[str, str] = {}
        for w in jobs:
            self._department[w.project] = w.department
            self._jobs.setdefault(w.project, []).append(self._job_item(w))
        self._projects: dict[str, list[Entry]] = {}
        for project, items in self._jobs.items():
            heapq.heapify(items)
            self._projects.setdefault(self._department[project], [])
            self._enter_project(project)
        self._departments: list[Entry] = []
        for department in self._projects:
            self._enter_department(department)
        # the project whose job was handed out last: it re-enters on the next pop
        self._serving: str | None = None

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _job_item(self, w: WorkloadState) -> tuple[tuple[object, ...], int, WorkloadState]:
        return (self._job_key(w), self._next_seq(), w)

    def _head(self, project: str) -> WorkloadState | None:
        """The first job of `project` that may take part (see head_ok), or None."""
        items = self._jobs[project]
        while items:
            w = items[0][2]
            if self._head_ok is None or self._head_ok(project, w):
                return w
            heapq.heappop(items)
            if self._turned_down is not None:
                self._turned_down(w)
        return None

    def _entry(self, queue: str, w: WorkloadState) -> Entry:
        """`queue`'s entry with candidate `w`, keyed as the state is now."""
        session = self._session
        key = session.queue_key(queue, w, self._pool, self._extra_of(w))
        inputs = (session.queue_key_inputs(queue, self._pool), w.id)
        return (key, self._next_seq(), queue, session.commits, inputs)

    def _enter_project(self, project: str) -> None:
        """Put `project` (not in its department's heap) back in it, if it has a job."""
        w = self._head(project)
        if w is not None:
            heapq.heappush(self._projects[self._department[project]], self._entry(project, w))

    def _enter_department(self, department: str) -> None:
        """Put `department` (not in the top heap) back in it, if it has a candidate."""
        best = self._best_project(department)
        if best is not None:
            w = self._jobs[best][0][2]
            heapq.heappush(self._departments, self._entry(department, w))

    def _fresh(self, heap: list[Entry], candidate: Callable[[str], WorkloadState | None]) -> bool:
        """Is the top entry of `heap` keyed as the state is now (its queue's candidate
        given by `candidate`)? If not, it is keyed again and put back in its place
        (False)."""
        key, _, queue, stamp, used = heap[0]
        session = self._session
        if stamp == session.commits:
            return True
        w = candidate(queue)
        assert w is not None, "a queue in the tree has a job"
        fresh = self._entry(queue, w)
        if fresh[4] == used:
            heapq.heapreplace(heap, (key, fresh[1], queue, session.commits, used))
            return True
        heapq.heapreplace(heap, fresh)
        return False

    def _first_job(self, project: str) -> WorkloadState | None:
        """The job `project` is keyed with: its first (see _head, which made it so)."""
        items = self._jobs[project]
        return items[0][2] if items else None

    def _candidate(self, department: str) -> WorkloadState | None:
        """The job `department` would serve: the first job of its best project."""
        best = self._best_project(department)
        return None if best is None else self._jobs[best][0][2]

    def _best_project(self, department: str) -> str | None:
        """The best project of `department` as the state is now, or None."""
        heap = self._projects[department]
        while heap and not self._fresh(heap, self._first_job):
            pass
        return heap[0][2] if heap else None

    def pop(self) -> WorkloadState | None:
        """The next job in queue order (None when none is left). The project of the job
        handed out before re-enters first, with its next job."""
        if self._serving is not None:
            project, self._serving = self._serving, None
            department = self._department[project]
            self._enter_project(project)
            self._enter_department(department)
        departments = self._departments
        while departments and not self._fresh(departments, self._candidate):
            pass
        if not departments:
            return None
        department = heapq.heappop(departments)[2]
        project = heapq.heappop(self._projects[department])[2]
        w = heapq.heappop(self._jobs[project])[2]
        self._serving = project
        return w

    def again(self, w: WorkloadState) -> None:
        """Put `w`, of the project whose job was handed out last, in its project: it asks
        for more (an elastic workload's next pod), or it was waiting behind that job
        (framework/alike_window.py)."""
        assert self._serving == w.project, "only the project being served takes a job back"
        heapq.heappush(self._jobs[w.project], self._job_item(w))

    def rest(self) -> Iterator[WorkloadState]:
        """Every job not handed out yet, in no particular order (nothing is ordered any
        more: see common.in_queue_order's `frozen`)."""
        for items in self._jobs.values():
            for _, _, w in items:
                yield w
            items.clear()
