"""What the runtime reports about running workloads: they finished, or they failed.

The simulated runtime (scheduler_core.runtime.simulated) calls these when a workload's simulated
duration is up; a real runtime would call them from its own reports. Each frees the
workload's pods, records an event per workload and asks for a cycle after commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from scheduler_core.choices import PLACED_STATES, EventType, WorkloadStatus
from scheduler_core.db.bulk_writes import update_rows
from scheduler_core.db.locked_workload import LockedWorkload
from scheduler_core.live_events.batch import EventBatch
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Allocation, Workload
from scheduler_core.models.versioned import bump_version

# What completing a workload reads, writes and publishes of it.
COMPLETION_FIELDS = (
    "id", "project_id", "name", "priority", "status", "spec", "pending_reason",
    "queue_position", "started_at", "finished_at", "progress_seconds", "version",
    "updated_at", "preemptions",
)  # fmt: skip


@dataclass(frozen=True)
class Completion:
    """A running workload that finished at `finished_at`; `started_at` is the run it
    belongs to (a workload restarted since then is not completed)."""

    workload_id: int
    started_at: datetime | None
    finished_at: datetime


def _pools_of(workload_ids: list[int]) -> dict[int, int]:
    return dict(
        Allocation.objects.filter(workload_id__in=workload_ids).values_list(
            "workload_id", "node__pool_id"
        )
    )


def finish_run(
    w: Workload | LockedWorkload, *, finished_at: datetime, duration: float | None
) -> str:
    """Mark `w`, whose run ended successfully at `finished_at`, completed (in memory: the
    caller writes it and frees its pods); returns the reason its event gives."""
    ran = (finished_at - w.started_at).total_seconds() if w.started_at else 0.0
    w.status = WorkloadStatus.COMPLETED
    w.finished_at = finished_at
    w.pending_reason = ""
    w.queue_position = None
    w.progress_seconds = duration or w.progress_seconds
    bump_version(w)  # written in bulk, not saved: raised here (models.versioned)
    return f"finished after running {ran:.1f} s"


def workloads_complete(
    *, completions: Sequence[Completion], request: bool = True
) -> list[Workload]:
    """Mark running (or starting) workloads completed at once (one transaction, constant
    queries).

    Workloads that are no longer running, or that restarted after the run that finished,
    are left alone. Returns the workloads completed.
    """
    if not completions:
        return []
    wanted = {c.workload_id: c for c in completions}
    with transaction.atomic():
        workloads = [
            w
            for w in Workload.objects.select_for_update()
            .filter(pk__in=list(wanted), status__in=PLACED_STATES)
            .order_by("pk")
            .only(*COMPLETION_FIELDS)
            if w.started_at == wanted[w.pk].started_at
        ]
        if not workloads:
            return []
        ids = [w.pk for w in workloads]
        pools = _pools_of(ids)
        Allocation.objects.filter(workload_id__in=ids).delete()
        batch = EventBatch(timezone.now())
        for w in workloads:
            reason = finish_run(w, finished_at=wanted[w.pk].finished_at, duration=w.duration)
            batch.add(
                type=EventType.COMPLETED, workload=w, pool_id=pools.get(w.pk), reason=reason,
                nodes=[],
            )  # fmt: skip
        update_rows(
            workloads,
            [
                "status",
                "finished_at",
                "pending_reason",
                "queue_position",
                "progress_seconds",
                "version",
                "updated_at",
            ],
        )
        batch.flush()
        if request:
            request_cycle()
    return workloads


def workload_complete(*, workload: Workload, at: datetime | None = None) -> Workload:
    """The runtime reports that a running workload finished successfully."""
    done = workloads_complete(
        completions=[Completion(workload.pk, workload.started_at, at or timezone.now())]
    )
    if not done:
        workload.refresh_from_db()
        raise ValidationError(
            {"status": f"only running workloads can complete; this one is {workload.status}"}
        )
    return done[0]


def workload_fail(*, workload: Workload, reason: str, at: datetime | None = None) -> Workload:
    """The runtime reports that a workload failed for good (its pods are freed)."""
    with transaction.atomic():
        workload = Workload.objects.select_for_update().get(pk=workload.pk)
        if workload.status not in (*PLACED_STATES, WorkloadStatus.PENDING):
            raise ValidationError(
                {
                    "status": f"only pending or running workloads can fail; "
                    f"this one is {workload.status}"
                }
            )
        pool_id = _pools_of([workload.pk]).get(workload.pk)
        Allocation.objects.filter(workload=workload).delete()
        workload.status = WorkloadStatus.FAILED
        workload.finished_at = at or timezone.now()
        workload.pending_reason = ""
        workload.queue_position = None
        workload.save()
        batch = EventBatch(timezone.now())
        batch.add(
            type=EventType.FAILED, workload=workload, pool_id=pool_id, reason=reason, nodes=[]
        )
        batch.flush()
        request_cycle()
    return workload
