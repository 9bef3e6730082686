"""Engine queue figures -> QueueState rows (written only when they change)."""

from __future__ import annotations

import math
from collections import defaultdict
from types import SimpleNamespace

from django.utils import timezone

from scheduler_core.adapters.snapshot import LiveSnapshot
from scheduler_core.db.bulk_writes import insert_objects, update_rows
from scheduler_core.engine import CycleResult, QueueStatus
from scheduler_core.models import QueueState

FIGURES = (
    "deserved_gpus", "limit_gpus", "fairshare_gpus", "allocated_gpus", "requested_gpus",
    "fairshare_cpu", "allocated_cpu", "fairshare_memory", "allocated_memory",
    "pending_count", "running_count",
)  # fmt: skip


def _finite(value: float) -> float:
    """Unlimited (not governed) amounts are stored as 0."""
    return value if math.isfinite(value) else 0.0


def _figures(status: QueueStatus, pending: int, running: int) -> dict[str, float | int | None]:
    return {
        "deserved_gpus": _finite(status.deserved.gpus),
        "limit_gpus": status.limit.gpus if math.isfinite(status.limit.gpus) else None,
        "fairshare_gpus": _finite(status.fairshare.gpus),
        "allocated_gpus": _finite(status.allocated.gpus),
        "requested_gpus": _finite(status.requested.gpus),
        "fairshare_cpu": _finite(status.fairshare.cpu),
        "allocated_cpu": _finite(status.allocated.cpu),
        "fairshare_memory": _finite(status.fairshare.memory),
        "allocated_memory": _finite(status.allocated.memory),
        "pending_count": pending,
        "running_count": running,
    }


def totals(live: LiveSnapshot, result: CycleResult) -> tuple[int, int]:
    """(pending, running) workloads after the cycle's decisions."""
    running = {w.id for w in live.snapshot.workloads if w.status == "running"}
    for d in result.decisions:
        if d.kind == "allocate":
            running.add(d.workload)
        elif d.kind in ("evict", "fail"):
            running.discard(d.workload)
    return len(result.pending), len(running)


def _counts(live: LiveSnapshot, result: CycleResult) -> tuple[dict, dict]:
    """Pending and running workloads per (queue, pool) after the cycle's decisions.

    Pending ones count in each of their candidate pools; running ones in their pool.
    """
    pool_names = list(live.pool_ids)
    pools_of = {w.id: (w.pools or tuple(pool_names)) for w in live.snapshot.workloads}
    project_of = {w.id: w.project for w in live.snapshot.workloads}
    parent = {q.name: q.parent for q in live.snapshot.queues if q.parent is not None}
    running_pool = {w.id: w.pool for w in live.snapshot.workloads if w.status == "running"}
    for d in result.decisions:
        if d.kind in ("allocate", "move"):
            running_pool[d.workload] = d.pool
        elif d.kind in ("evict", "fail"):
            running_pool.pop(d.workload, None)
    pending: dict[tuple[str, str], int] = defaultdict(int)
    running: dict[tuple[str, str], int] = defaultdict(int)
    for wid in result.pending:
        queue = project_of.get(wid)
        if queue is None:
            continue
        for pool in pools_of[wid]:
            pending[(queue, pool)] += 1
            pending[(parent[queue], pool)] += 1
    for wid, running_in in running_pool.items():
        queue = project_of[wid]
        if running_in is not None:
            running[(queue, running_in)] += 1
            running[(parent[queue], running_in)] += 1
    return pending, running


def write_queue_states(live: LiveSnapshot, result: CycleResult) -> int:
    """Upsert one QueueState per queue per pool; rows that did not change are not written.

    Returns how many rows were written.
    """
    pending, running = _counts(live, result)
    # plain rows, unordered: a thousand queues are read every cycle
    existing = {
        (row["department_id"], row["project_id"], row["pool_id"]): row
        for row in QueueState.objects.order_by().values(
            "pk", "department_id", "project_id", "pool_id", *FIGURES
        )
    }
    changed: list[SimpleNamespace] = []
    created: list[QueueState] = []
    now = timezone.now()
    for queue, per_pool in result.queues.items():
        owner = live.queue_owners.get(queue)
        if owner is None:
            continue
        kind, owner_pk = owner
        department_id = owner_pk if kind == "department" else None
        project_id = owner_pk if kind == "project" else None
        for pool, status in per_pool.items():
            pool_id = live.pool_ids.get(pool)
            if pool_id is None:
                continue
            values = _figures(status, pending[(queue, pool)], running[(queue, pool)])
            row = existing.get((department_id, project_id, pool_id))
            if row is None:
                created.append(
                    QueueState(pool_id=pool_id, department_id=department_id,
                               project_id=project_id, **values)
                )  # fmt: skip
            elif any(_differs(row[k], v) for k, v in values.items()):
                changed.append(SimpleNamespace(pk=row["pk"], updated_at=now, **values))
    # a new cluster's first cycle creates a row per queue and pool: a thousand queues
    insert_objects(created)
    if changed:
        update_rows(changed, [*FIGURES, "updated_at"], model=QueueState)
    return len(created) + len(changed)


def _differs(old: float | int | None, new: float | int | None) -> bool:
    if old is None or new is None:
        return old is not new
    return abs(float(old) - float(new)) > 1e-9
