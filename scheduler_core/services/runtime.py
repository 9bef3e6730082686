"""What the runtime reports about running workloads: they finished, their run stopped
early (re-queued or, out of restarts, failed), or they failed.

The simulated executor calls these when a workload's simulated duration is up; the run
lifecycle (scheduler_core.runtime.lifecycle) from executors' reports; node faults and
drains (services.cluster) when a node goes. The transitions themselves are
engine.transitions; here they are written, with their events. Each frees the workload's
pods, records an event per workload and asks for a cycle after commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from scheduler_core.choices import PLACED_STATES, EventType, WorkloadStatus
from scheduler_core.db.bulk_writes import update_rows
from scheduler_core.db.locked_workload import LockedWorkload
from scheduler_core.engine import transitions
from scheduler_core.engine.transitions import Cause, Requeue
from scheduler_core.live_events.batch import EventBatch
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Node, Workload
from scheduler_core.models.versioned import bump_version
from scheduler_core.services.workloads import workloads_release

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


def finish_run(
    w: Workload | LockedWorkload, *, finished_at: datetime, duration: float | None
) -> str:
    """Mark `w`, whose run ended successfully at `finished_at`, completed (in memory: the
    caller writes it and frees its pods); returns the reason its event gives."""
    reason = transitions.complete(w, at=finished_at, progress=duration)
    bump_version(w)  # written in bulk, not saved: raised here (models.versioned)
    return reason


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
    with transaction.atomic(savepoint=False):  # a caller's transaction is all or nothing
        workloads = [
            w
            for w in Workload.objects.select_for_update(no_key=True)
            .filter(pk__in=list(wanted), status__in=PLACED_STATES)
            .order_by("pk")
            .only(*COMPLETION_FIELDS)
            if w.started_at == wanted[w.pk].started_at
        ]
        if not workloads:
            return []
        ids = [w.pk for w in workloads]
        pools = workloads_release(ids)
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
        workload = Workload.objects.select_for_update(no_key=True).get(pk=workload.pk)
        if workload.status not in (*PLACED_STATES, WorkloadStatus.PENDING):
            raise ValidationError(
                {
                    "status": f"only pending or running workloads can fail; "
                    f"this one is {workload.status}"
                }
            )
        pool_id = workloads_release([workload.pk]).get(workload.pk)
        transitions.fail(workload, at=at or timezone.now())
        workload.save()
        batch = EventBatch(timezone.now())
        batch.add(
            type=EventType.FAILED, workload=workload, pool_id=pool_id, reason=reason, nodes=[]
        )
        batch.flush()
        request_cycle()
    return workload


# What a stopped run's event is, by why it stopped: the scheduler's doing (a preemption,
# with the work it lost) or the workload's own (a failed run, with its exit code).
STOP_EVENTS = {
    Cause.PREEMPTED: (EventType.PREEMPTED, "preempted"),
    Cause.DRAINED: (EventType.PREEMPTED, "drain"),
    Cause.FAULT: (EventType.PREEMPTED, "fault"),
    Cause.FAILED_RUN: (EventType.RUN_FAILED, "failed"),
}


def workload_requeue(
    *,
    workload: Workload,
    cause: Cause,
    why: str,
    at: datetime,
    node: Node | None = None,
    details: dict[str, Any] | None = None,
) -> Requeue:
    """The workload's run stopped early (`why`; inside a transaction, the workload
    locked): its pods are freed, it keeps its last checkpoint and goes back to the queue,
    or fails for good once `cause` used up its restarts (engine.transitions). Records the
    stop's event (and the failure's), and asks for a cycle after commit."""
    workloads_release([workload.pk])
    kept = transitions.progress_kept(
        spec=workload.spec, progress=workload.progress_seconds, started_at=workload.started_at,
        stopped_at=at,
    )  # fmt: skip
    restarts_before = workload.restarts
    outcome = transitions.requeue(
        workload, cause=cause, why=why, at=at, progress=kept,
        backoff_limit=workload.backoff_limit,
    )  # fmt: skip
    workload.retry_at = transitions.retry_at(outcome, at)
    workload.save()
    pool = node.pool if node is not None else None
    type, kind = STOP_EVENTS[cause]
    event_record(
        type=type, workload=workload, node=node, pool=pool, at=at, reason=why,
        details={"kind": kind, "restarts": workload.restarts, **(details or {})},
    )  # fmt: skip
    if not outcome.requeued:
        limit = transitions.restart_limit(cause, workload.backoff_limit)
        event_record(
            type=EventType.FAILED, workload=workload, node=node, pool=pool, at=at,
            reason=transitions.exhausted_reason(why, restarts=restarts_before, limit=limit),
            details={"kind": kind, "restarts": workload.restarts, **(details or {})},
        )  # fmt: skip
    request_cycle()
    return outcome
