"""One order per pool for the queue page: the pending workloads of every project queue of a
pool merged the way the allocate action takes them, each with its position in the pool, the
jobs ahead of it, and when it may start where that can be told.

The engine stores each workload's position inside its *project* queue (two projects each
have a #1). The allocate action then always takes the head of the best queue next (see
`engine/actions/common.in_queue_order`), queues ordered by the proportion plugin: the
department, then the project, each by (would it go over its fairshare, would it go over its
deserved quota, higher rank first, smallest share of its fairshare), counting what the head
would take; what it takes is added before the next pick. Here the same merge runs over the
figures the last cycle wrote (QueueState), so the page shows the order the scheduler will
consider the workloads in, not a guess per project.

The estimated start is told only for pools run by the simulator, whose runs end at known
times (spec `duration`): GPUs free on ready nodes now, then the run ends in time order, are
handed to the pending workloads in queue order; a workload whose turn comes before the known
ends run out gets the time its GPUs are free ("now" when they already are), the rest None.
It is a capacity estimate, and it is not told where it would contradict why the workload
waits: a workload that its queue's rules keep waiting (the reason kinds of
`engine.reasons.QUEUE_TURN_KINDS`: fair share, quota, limit, priority) starts when its turn
comes, not when GPUs free, and one that its project's or department's figures can never
admit (it asks more than the queue's limit, or more than its deserved quota while the queue
gets no over-quota share, or may not use over-quota GPUs) never starts as quotas stand.
Neither takes GPUs in the hand-out to the workloads behind it. A gang may still start
later than told.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from scheduler_core.choices import PLACED_STATES, NodeState
from scheduler_core.engine.reasons import QUEUE_TURN_KINDS
from scheduler_core.models import Allocation, Node, Workload
from scheduler_core.runtime.executor import Capability
from scheduler_core.runtime.registry import backends_with, executor_for
from scheduler_core.selectors.queues import PoolQueues, QueueRow

EPSILON = 1e-9


@dataclass
class QueuedWorkload:
    """A pending workload at its place in one pool's queue."""

    workload: Workload
    position: int  # 1-based, unique within the pool
    ahead: int  # pending workloads the scheduler considers before it in this pool
    estimated_start: datetime | None  # None: cannot be told
    starts_now: bool = False  # its GPUs are free already (it waits for something else)
    waits_for: str = ""  # TURN or NEVER when the estimate does not apply (module docstring)


TURN = "turn"
"""Its queue's rules keep it waiting: it starts when its turn comes, not when GPUs free."""
NEVER = "never"
"""Its queue's quota, limit or over-quota share can never admit it, as they stand."""


@dataclass
class _Figures:
    """A queue's figures in a pool, updated as the merge hands out GPUs."""

    allocated: float
    deserved: float
    fairshare: float
    rank: int

    def key(self, extra: float) -> tuple[bool, bool, int, float]:
        used = self.allocated + extra
        over = extra > EPSILON and used > self.fairshare + EPSILON
        outside = extra > EPSILON and used > self.deserved + EPSILON
        share = used / self.fairshare if self.fairshare > EPSILON else math.inf
        return (over, outside, -self.rank, share)


def _admits_ever(row: QueueRow | None, w: Workload) -> bool:
    """Whether queue `row` could ever let `w` run, as its quota and limit stand."""
    if row is None:
        return True
    need = w.total_gpus
    if row.limit_gpus is not None and need > row.limit_gpus + EPSILON:
        return False
    within_quota = need <= row.deserved_gpus + EPSILON
    return within_quota or (w.preemptible and row.over_quota_weight > EPSILON)


def _waits_for(queues: PoolQueues, order: list[Workload]) -> list[str]:
    """Per workload of `order`: NEVER, TURN or "" (the capacity estimate applies)."""
    departments = {r.id: r for r in queues.departments}
    projects = {r.id: r for r in queues.projects}
    found = []
    for w in order:
        rows = (projects.get(w.project_id), departments.get(w.project.department_id))
        if not all(_admits_ever(row, w) for row in rows):
            found.append(NEVER)
        elif w.pending_reason_kind in QUEUE_TURN_KINDS:
            found.append(TURN)
        else:
            found.append("")
    return found


def _figures(rows: Iterable[QueueRow]) -> dict[int, _Figures]:
    return {
        r.id: _Figures(r.allocated_gpus, r.deserved_gpus, r.fairshare_gpus, r.rank) for r in rows
    }


def _within_project(w: Workload) -> tuple[object, ...]:
    """The engine's order inside a project queue: its stored position, else priority."""
    return (w.queue_position is None, w.queue_position or 0, -w.priority, w.submitted_at, w.pk)


def merged_order(queues: PoolQueues) -> list[Workload]:
    """The pending workloads of one pool in the order the allocate action takes them."""
    departments = _figures(queues.departments)
    projects = _figures(queues.projects)
    by_project: dict[int, list[Workload]] = {}
    for w in queues.pending:
        by_project.setdefault(w.project_id, []).append(w)
    for items in by_project.values():
        items.sort(key=_within_project, reverse=True)  # pop() takes the head
    none = _Figures(0.0, 0.0, 0.0, 0)
    order: list[Workload] = []
    while by_project:

        def key(project_id: int) -> tuple[object, ...]:
            head = by_project[project_id][-1]
            extra = head.total_gpus
            dept = departments.get(head.project.department_id, none)
            proj = projects.get(project_id, none)
            return (*dept.key(extra), *proj.key(extra), head.project.name, project_id)

        best = min(by_project, key=key)
        head = by_project[best].pop()
        order.append(head)
        for figures in (departments.get(head.project.department_id), projects.get(best)):
            if figures is not None:
                figures.allocated += head.total_gpus
        if not by_project[best]:
            del by_project[best]
    return order


@dataclass
class _PoolCapacity:
    free_now: float
    run_ends: list[tuple[datetime, float]]  # (when, GPUs freed), soonest first


def _capacities(pool_ids: list[int]) -> dict[int, _PoolCapacity]:
    """Free GPUs on ready nodes and the known run ends of each pool whose executor knows
    when runs end (2 queries)."""
    capacity = {pk: _PoolCapacity(0.0, []) for pk in pool_ids}
    predicted = backends_with(Capability.KNOWS_RUN_ENDS)
    for pool_id, count in Node.objects.filter(
        pool_id__in=pool_ids, pool__backend__in=predicted, state=NodeState.READY
    ).values_list("pool_id", "gpu_count"):
        capacity[pool_id].free_now += count
    ends: dict[tuple[int, int], tuple[datetime | None, float]] = {}
    for alloc in Allocation.objects.filter(
        node__pool_id__in=pool_ids,
        node__pool__backend__in=predicted,
        workload__status__in=PLACED_STATES,
    ).select_related("node__pool", "workload"):
        w = alloc.workload
        gpus = alloc.gpu_fraction * max(len(alloc.gpu_devices or []), 0)
        if alloc.node.state == NodeState.READY:
            capacity[alloc.node.pool_id].free_now -= gpus
        finish = _run_end(alloc.node.pool.backend, w) if w.started_at is not None else None
        key = (alloc.node.pool_id, w.pk)
        _, held = ends.get(key, (finish, 0.0))
        # a run on a node that takes no pods frees nothing a pending workload could use
        ends[key] = (finish, held + (gpus if alloc.node.state == NodeState.READY else 0.0))
    for (pool_id, _), (finish, gpus) in ends.items():
        if finish is not None and gpus > EPSILON:
            capacity[pool_id].run_ends.append((finish, gpus))
    for cap in capacity.values():
        cap.run_ends.sort(key=lambda end: end[0])
    return capacity


def _run_end(backend: str, w: Workload) -> datetime | None:
    """When the workload's run ends, as the executor of `backend` predicts it."""
    predictor: Any = executor_for(backend)  # (declares Capability.KNOWS_RUN_ENDS)
    end: datetime | None = predictor.run_end(
        spec=w.spec, progress=w.progress_seconds, started_at=w.started_at
    )
    return end


def _estimate(
    order: list[Workload], waits: list[str], capacity: _PoolCapacity | None, now: datetime
):
    """(estimated start, starts now) per workload of `order` (see the module docstring);
    those that wait for something else than GPUs (`waits`) get none and take none."""
    if capacity is None:
        return [(None, False)] * len(order)
    free = capacity.free_now
    ends = iter(capacity.run_ends)
    at: datetime | None = now
    out: list[tuple[datetime | None, bool]] = []
    for w, waits_for in zip(order, waits, strict=True):
        if waits_for:
            out.append((None, False))
            continue
        need = w.total_gpus
        while at is not None and free + EPSILON < need:
            nxt = next(ends, None)
            if nxt is None:
                at = None
            else:
                at = max(nxt[0], now)
                free += nxt[1]
        if at is None:
            out.append((None, False))
            continue
        free -= need
        out.append((at, at <= now))
    return out


def pool_queues_in_order(queues: list[PoolQueues]) -> dict[int, list[QueuedWorkload]]:
    """Per pool id, its pending workloads in scheduler order with position, jobs ahead and
    estimated start (2 queries for all pools together)."""
    predicted = backends_with(Capability.KNOWS_RUN_ENDS)
    simulated = [q.pool.pk for q in queues if q.pool.backend in predicted]
    capacities = _capacities(simulated) if simulated else {}
    now = timezone.now()
    result: dict[int, list[QueuedWorkload]] = {}
    for q in queues:
        order = merged_order(q)
        waits = _waits_for(q, order)
        estimates = _estimate(order, waits, capacities.get(q.pool.pk), now)
        result[q.pool.pk] = [
            QueuedWorkload(
                workload=w,
                position=i + 1,
                ahead=i,
                estimated_start=start,
                starts_now=ready,
                waits_for=waits_for,
            )
            for i, (w, (start, ready), waits_for) in enumerate(
                zip(order, estimates, waits, strict=True)
            )
        ]
    return result
