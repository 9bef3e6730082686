"""What a queue's waiting workloads have waited for room, and what reclaim spends of it.

In a pool that weighs lost work (PoolConfig.reclaim_weighs_lost_work), a queue may
throw away, to reclaim room, no more GPU-time than its pending workloads have waited
for room (lost_work.waited_gpu_seconds): ski rental, as for consolidation's moves
(lost_work.move_is_worth_it), but per queue, since reclaim restores a queue's share,
not one job's. Young runs are taken at once; a run of many GPU-hours only once the
queue has waited about as long, by when GPUs have often freed by themselves.

Waiting is the rent, a reclaim the purchase: once a wait has paid for a reclaim it is
spent. The workload a reclaim starts pays first with its own wait (which ends as it
starts); what the victims lose beyond that is charged to the queue's other pending
workloads, the last in queue order first (they will wait longest, so the charge is not
forgotten when the next one starts). A charged workload's wait then counts from later
on (Session.room_wait_paid, which the cycle's result carries as
CycleResult.room_wait_since): without that, every cycle would weigh the same hours
again, and a queue of many small waiting jobs could take back run after run on an
allowance of a few GPU-hours.

Only the waits of the workloads the queue's fairshare has room for count: in queue
order, those whose GPUs fit between what the queue holds in the pool and its fairshare
there. A reclaim restores a queue to its fairshare, so the workloads beyond it would not
run on what it frees; without this, a queue with a backlog of hundreds of small
workloads, a little below its fairshare, could throw away a long run of many GPUs (on
the Philly trace's 10-04 window, two 32-GPU runs of 6 and 10 hours, 4.7 % of the day's
work, for a fairshare gap of a few dozen GPUs).

PoolConfig.reclaim_lost_work_ratio r scales the price: a queue may throw away r times
what it has waited, and a reclaim that throws away X spends X / r of the wait (r = 0.5:
the queue waits twice as long as the work it throws away).
"""

from __future__ import annotations

from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import WorkloadState, priority_order
from scheduler_core.engine.resources import EPSILON


class RoomWaits:
    """What each queue's pending workloads in one pool have waited for room and not
    spent, during reclaim (each workload's part is Session.room_waited)."""

    __slots__ = ("_next", "_queues", "_ratio", "_session", "_totals")

    def __init__(
        self, session: Session, pool: str, jobs: list[WorkloadState], ratio: float = 1.0
    ) -> None:
        self._session = session
        self._ratio = ratio
        # per project, its pending workloads, the last in queue order first
        self._queues: dict[str, list[WorkloadState]] = {}
        for job in jobs:
            if not job.pods:  # a running elastic workload asking for more has no wait
                self._queues.setdefault(job.project, []).append(job)
        self._totals: dict[str, float] = {}  # project -> what its queue has not spent
        # project -> where in its queue charging goes on (those before have nothing left)
        self._next: dict[str, int] = {}
        for project, queue in self._queues.items():
            queue[:] = self._within_fairshare(project, pool, queue)
            queue.reverse()
            self._totals[project] = sum(self._left(job) for job in queue)

    def _within_fairshare(
        self, project: str, pool: str, queue: list[WorkloadState]
    ) -> list[WorkloadState]:
        """The first workloads of `queue` in queue order whose GPUs fit between what
        `project` holds in `pool` and its fairshare there."""
        queue.sort(key=priority_order)
        asks = [self._session.gang_request(job)[0] for job in queue]
        total = sum(asks)
        room = total - self._session.over_fairshare_by(project, pool, [total, 0.0, 0.0])
        kept = 0
        for gpus in asks:
            if gpus > room + EPSILON:
                break
            room -= gpus
            kept += 1
        return queue[:kept]

    def _waited(self, job: WorkloadState) -> float:
        """What `job` has waited for room and not spent (Session.room_waited)."""
        return self._session.room_waited(job, self._session.gang_request(job)[0])

    def _left(self, job: WorkloadState) -> float:
        """What `job` has waited and not spent (nothing once it runs)."""
        return 0.0 if job.pods else self._waited(job)

    def allowance(self, project: str) -> float:
        """GPU-seconds of runs `project` may throw away: what its pending workloads have
        waited and not spent, times the pool's reclaim_lost_work_ratio."""
        return max(self._totals.get(project, 0.0), 0.0) * self._ratio

    def pay(self, started: WorkloadState, thrown: float) -> None:
        """`started` was started (or grown) by a reclaim that threw away `thrown`
        GPU-seconds: its own wait pays first, the other pending workloads of its queue
        the rest (see the module doc)."""
        project = started.project
        thrown /= self._ratio  # in waited GPU-seconds
        own = 0.0
        if not started.initial_pods and project in self._totals:  # it was pending
            own = self._waited(started)
            self._totals[project] -= own  # its wait leaves the queue's
        owed = thrown - own
        queue = self._queues.get(project, [])
        i = self._next.get(project, 0)
        while i < len(queue) and owed > EPSILON:
            job = queue[i]
            left = self._left(job)
            spent = min(left, owed)
            if spent > 0.0:
                self._totals[project] -= spent
                self._session.pay_room_wait(job, self._session.gang_request(job)[0], spent)
                owed -= spent
            if left - spent <= EPSILON:
                i += 1
        self._next[project] = i
