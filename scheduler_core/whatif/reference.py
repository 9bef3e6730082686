"""Reference schedulers to compare the engine with on the same trace: FIFO, and FIFO with
EASY backfill. Same cluster, same gangs (`pod_shape`), same decision times (every
`step_seconds`, jobs finishing at their own time), best-fit placement of each pod on the
fullest node it fits; no preemption, no moves.

- FIFO starts jobs in submission order and stops at the first that does not fit.
- Backfill then reserves for that first job the earliest time it will fit (running jobs
  end when their durations say: the trace's durations are taken as exact estimates) and
  starts later jobs that fit now if they end before that time or leave room for it then.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler_core.whatif.run_figures import HOUR, RunTally
from scheduler_core.whatif.traces import TraceCluster, TraceJob, pod_shape

ProgressCallback = Callable[[float], None]


@dataclass(order=True, slots=True)
class _Running:
    end: float
    order: int
    job: TraceJob = field(compare=False)
    nodes: list[int] = field(compare=False)
    per_pod: int = field(compare=False)


def place(free: list[int], pods: int, per_pod: int) -> list[int] | None:
    """Nodes for each pod (best fit: the fullest node it fits), or None."""
    taken: dict[int, int] = {}
    chosen: list[int] = []
    for _ in range(pods):
        best, best_left = -1, math.inf
        for node, gpus in enumerate(free):
            left = gpus - taken.get(node, 0)
            if per_pod <= left < best_left:
                best, best_left = node, left
        if best < 0:
            return None
        taken[best] = taken.get(best, 0) + per_pod
        chosen.append(best)
    return chosen


@dataclass(slots=True)
class ReferenceScheduler:
    """One replay of `jobs` (in submission order) on `cluster`, reporting to `tally`."""

    cluster: TraceCluster
    tally: RunTally
    backfill: bool
    step_seconds: float = 60.0
    free: list[int] = field(default_factory=list)
    queue: deque[TraceJob] = field(default_factory=deque)
    running: list[_Running] = field(default_factory=list)
    _started: int = 0

    def __post_init__(self) -> None:
        self.free = [self.cluster.gpus_per_node] * self.cluster.nodes

    def replay(self, jobs: list[TraceJob], on_progress: ProgressCallback | None = None) -> None:
        """Run until every job has finished."""
        arrivals = deque(jobs)
        now = 0.0
        reported = 0
        while arrivals or self.queue or self.running:
            self._take_until(now, arrivals)
            self._schedule(now)
            upcoming = min(
                self.running[0].end if self.running else math.inf,
                arrivals[0].submitted if arrivals else math.inf,
            )
            if upcoming == math.inf:
                break  # only jobs that can never fit are left
            now = max(now + self.step_seconds, self._tick_at_or_after(upcoming))
            while on_progress is not None and now >= (reported + 1) * HOUR:
                reported += 1
                on_progress(reported)

    def _tick_at_or_after(self, at: float) -> float:
        return math.ceil(at / self.step_seconds - 1e-9) * self.step_seconds

    def _take_until(self, now: float, arrivals: deque[TraceJob]) -> None:
        """Completions and arrivals up to `now`, in time order."""
        while True:
            end = self.running[0].end if self.running else math.inf
            submitted = arrivals[0].submitted if arrivals else math.inf
            if min(end, submitted) > now:
                return
            if end <= submitted:
                done = heapq.heappop(self.running)
                for node in done.nodes:
                    self.free[node] += done.per_pod
                self.tally.finish(done.end, done.job.name)
            else:
                job = arrivals.popleft()
                self.tally.submit(job.submitted, job.name, job.team, job.gpus, job.duration)
                self.queue.append(job)

    def _schedule(self, now: float) -> None:
        while self.queue and self._try_start(now, self.queue[0]):
            self.queue.popleft()
        if not self.backfill or len(self.queue) < 2:
            return
        head = self.queue[0]
        shadow, spare = self._reservation(head)
        head_shape = pod_shape(head.gpus, self.cluster.gpus_per_node)
        for job in list(self.queue)[1:]:
            pods, per_pod = pod_shape(job.gpus, self.cluster.gpus_per_node)
            if per_pod > max(self.free):
                continue  # the common case on a full cluster, without trying each node
            nodes = place(self.free, pods, per_pod)
            if nodes is None:
                continue
            if now + job.duration > shadow:
                after = list(spare)
                for node in nodes:
                    after[node] -= per_pod
                if place(after, *head_shape) is None:
                    continue
                spare = after
            self._start(now, job, nodes, per_pod)
            self.queue.remove(job)

    def _try_start(self, now: float, job: TraceJob) -> bool:
        pods, per_pod = pod_shape(job.gpus, self.cluster.gpus_per_node)
        nodes = place(self.free, pods, per_pod)
        if nodes is not None:
            self._start(now, job, nodes, per_pod)
        return nodes is not None

    def _start(self, now: float, job: TraceJob, nodes: list[int], per_pod: int) -> None:
        for node in nodes:
            self.free[node] -= per_pod
        heapq.heappush(
            self.running, _Running(now + job.duration, self._started, job, nodes, per_pod)
        )
        self._started += 1
        self.tally.start(now, job.name, job.gpus)

    def _reservation(self, head: TraceJob) -> tuple[float, list[int]]:
        """When the head job will fit as running jobs end, and the free GPUs then."""
        free = list(self.free)
        shape = pod_shape(head.gpus, self.cluster.gpus_per_node)
        for r in sorted(self.running):
            for node in r.nodes:
                free[node] += r.per_pod
            if place(free, *shape) is not None:
                return r.end, free
        return math.inf, free
