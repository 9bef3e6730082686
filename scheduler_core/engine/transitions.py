"""A workload's state transitions, written once (pure: no Django).

Every path that changes a workload's status goes through the functions below: the apply
step (the engine's decisions), node faults and drains (services.cluster), what executors
report (runtime.lifecycle), users (cancel, suspend, resume in services.workloads), and
the engine's own simulation, which asks `requeue_outcome` the same question. The caller
holds the workload (a model instance or the apply step's LockedWorkload: anything with
the fields of `WorkloadFields`), calls one function, then writes the row and records
the event.

Why a run stops decides what it costs the workload (`Cause`):

- preempted (reclaim, priority or fair-share preemption): counted as a preemption, no
  limit;
- drained (an admin drained its node): counted as nothing, no limit;
- fault (its node failed: down, lost): a restart against `backoff_limit` (None: always
  re-queued);
- failed_run (its command failed: a non-zero exit, it could not start, it was lost): a
  restart against `backoff_limit` (None: DEFAULT_FAILED_RUN_RESTARTS).

A restart is counted only when one is given: a workload that fails for good keeps the
number of restarts it had. A re-queued workload keeps its last checkpoint (the caller
passes the progress it keeps). After a failed run it waits `retry_delay` seconds
(10 s doubling to 300 s, as Kubernetes backs off crash loops) before it may start again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

# Workload statuses (the values of choices.WorkloadStatus; a test keeps them equal).
PENDING = "pending"
STARTING = "starting"
RUNNING = "running"
SUSPENDED = "suspended"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
PLACED = frozenset({STARTING, RUNNING})

# How many times a workload whose command fails is started again when it names no
# `backoff_limit` (Determined's `max_restarts` is 5, Kubernetes Jobs' `backoffLimit` 6).
DEFAULT_FAILED_RUN_RESTARTS = 3

FIRST_RETRY_DELAY = 10.0  # seconds before a failed workload starts again, doubling
MAX_RETRY_DELAY = 300.0  # per restart up to this

# The pending reason kinds a re-queue leaves (until the next cycle explains the wait).
KIND_PREEMPTED = "preempted"
KIND_BACKOFF = "backoff"


class Cause(StrEnum):
    """Why a workload's run stopped before it completed."""

    PREEMPTED = "preempted"
    DRAINED = "drained"
    FAULT = "fault"
    FAILED_RUN = "failed_run"


class WorkloadFields(Protocol):
    """The fields of a workload the transitions read and write."""

    status: str
    restarts: int
    preemptions: int
    started_at: datetime | None
    finished_at: datetime | None
    pending_since: datetime | None
    pending_reason: str
    pending_reason_kind: str
    queue_position: int | None
    progress_seconds: float


@dataclass(frozen=True, slots=True)
class Requeue:
    """What a stopped run means for its workload: re-queued (with its restart and
    preemption counts after the stop, the kind of its pending reason and how long it
    waits before it may start again) or, out of restarts, failed."""

    requeued: bool
    restarts: int
    preemptions: int
    reason_kind: str
    retry_delay: float


def restart_limit(cause: Cause, backoff_limit: int | None) -> int | None:
    """Restarts a workload is allowed after stops of this cause (None: no limit)."""
    if cause == Cause.FAULT:
        return backoff_limit
    if cause == Cause.FAILED_RUN:
        return DEFAULT_FAILED_RUN_RESTARTS if backoff_limit is None else backoff_limit
    return None  # preemptions and drains are the scheduler's doing: never held against it


def retry_delay(restarts: int) -> float:
    """Seconds a workload whose run failed waits before its restart number `restarts`."""
    return min(FIRST_RETRY_DELAY * 2.0 ** max(restarts - 1, 0), MAX_RETRY_DELAY)


def requeue_outcome(
    *, cause: Cause, restarts: int, preemptions: int, backoff_limit: int | None
) -> Requeue:
    """What a run stopped by `cause` means for a workload with these counts."""
    counted = cause in (Cause.FAULT, Cause.FAILED_RUN)
    limit = restart_limit(cause, backoff_limit)
    if counted and limit is not None and restarts + 1 > limit:
        return Requeue(False, restarts, preemptions, "", 0.0)
    after = restarts + 1 if counted else restarts
    if cause == Cause.FAILED_RUN:
        return Requeue(True, after, preemptions, KIND_BACKOFF, retry_delay(after))
    preempted = preemptions + 1 if cause == Cause.PREEMPTED else preemptions
    return Requeue(True, after, preempted, KIND_PREEMPTED, 0.0)


def exhausted_reason(why: str, *, restarts: int, limit: int | None) -> str:
    """The reason a workload fails with once its restarts are used up."""
    if not restarts:
        return f"{why}; backoff limit {limit}: no restart"
    times = "once" if restarts == 1 else f"{restarts} times"
    return f"{why}; restarted {times}, backoff limit {limit} used up"


def spec_seconds(spec: Mapping[str, Any] | None, key: str) -> float | None:
    """A positive number of seconds from a workload spec (None when absent or invalid)."""
    value = (spec or {}).get(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def progress_kept(
    *,
    spec: Mapping[str, Any] | None,
    progress: float,
    started_at: datetime | None,
    stopped_at: datetime,
) -> float:
    """Seconds of progress a workload keeps when its run stops early, whoever ran it:
    its last checkpoint (the spec's `checkpoint_every`), else nothing."""
    every = spec_seconds(spec, "checkpoint_every")
    if every is None or started_at is None:
        return 0.0
    done = progress + max((stopped_at - started_at).total_seconds(), 0.0)
    duration = spec_seconds(spec, "duration")
    if duration is not None:
        done = min(done, duration)
    return max(progress, math.floor(done / every + 1e-9) * every)


def _leave_queue(w: WorkloadFields) -> None:
    w.pending_reason = ""
    w.pending_reason_kind = ""
    w.queue_position = None


def start(w: WorkloadFields, *, status: str, at: datetime) -> None:
    """The scheduler placed the workload: `running` where its run starts with the
    placement, `starting` where an executor reports when its processes run."""
    w.status = status
    w.started_at = at
    _leave_queue(w)


def mark_running(w: WorkloadFields) -> bool:
    """Every pod of a starting workload runs: it is running (True when it changed)."""
    if w.status != STARTING:
        return False
    w.status = RUNNING
    return True


def requeue(
    w: WorkloadFields,
    *,
    cause: Cause,
    why: str,
    at: datetime,
    progress: float,
    backoff_limit: int | None,
) -> Requeue:
    """The workload's run stopped early (`why`, for its pending reason): back to the
    queue keeping `progress` seconds (its last checkpoint), or failed when `cause` used
    up its restarts. The caller frees its pods and records the event."""
    outcome = requeue_outcome(
        cause=cause, restarts=w.restarts, preemptions=w.preemptions, backoff_limit=backoff_limit
    )
    w.progress_seconds = progress
    w.started_at = None
    w.queue_position = None
    if not outcome.requeued:
        fail(w, at=at)
        return outcome
    w.status = PENDING
    w.pending_since = at
    w.restarts = outcome.restarts
    w.preemptions = outcome.preemptions
    w.pending_reason_kind = outcome.reason_kind
    w.pending_reason = f"re-queued: {why}"
    if outcome.retry_delay:
        w.pending_reason += f"; starting again in {outcome.retry_delay:g} s"
    return outcome


def retry_at(outcome: Requeue, at: datetime) -> datetime | None:
    """When a re-queued workload may start again (None: at once)."""
    return at + timedelta(seconds=outcome.retry_delay) if outcome.retry_delay else None


def fail(w: WorkloadFields, *, at: datetime) -> None:
    """The workload failed for good."""
    w.status = FAILED
    w.finished_at = at
    _leave_queue(w)


def complete(w: WorkloadFields, *, at: datetime, progress: float | None) -> str:
    """The workload's run ended successfully at `at` (`progress`: the seconds of work it
    reached, None: keep what it says); returns the reason its event gives."""
    ran = (at - w.started_at).total_seconds() if w.started_at else 0.0
    w.status = COMPLETED
    w.finished_at = at
    w.progress_seconds = progress or w.progress_seconds
    _leave_queue(w)
    return f"finished after running {ran:.1f} s"


def cancel(w: WorkloadFields, *, at: datetime) -> None:
    """A user stopped the workload for good."""
    w.status = CANCELLED
    w.finished_at = at
    w.pending_reason = ""
    w.queue_position = None


def suspend(w: WorkloadFields, *, why: str) -> None:
    """A user took the workload out of scheduling."""
    w.status = SUSPENDED
    w.pending_reason = why
    w.queue_position = None


def resume(w: WorkloadFields, *, why: str) -> None:
    """A suspended workload is back in its queue."""
    w.status = PENDING
    w.pending_reason = why
