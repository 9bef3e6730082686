"""Simulated runs (settings.SIMULATED_RUNTIME, the default): a running workload whose
spec has `duration` completes that many seconds of progress after it (re)starts. An
evicted or moved workload starts over, or from its last checkpoint when its spec says
`checkpoint_every: N` (progress is kept in Workload.progress_seconds; the rule is
engine.transitions.progress_kept, whoever ran it).

A cycle asks first which runs ended by the time of its snapshot (runtime.routing, from
the snapshot: no query of its own); the same cycle's apply step completes them in its
one transaction. Runs that end while no cycle runs are completed by the runtime tick
(`complete_due`, the executor's `observe`). With SIMULATED_RUNTIME off, runs end only
when reported (services.runtime: workload_complete, workload_fail).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from scheduler_core.choices import WorkloadStatus
from scheduler_core.engine.transitions import spec_seconds
from scheduler_core.models import Allocation, Workload
from scheduler_core.services.runtime import Completion, workloads_complete


def due_at(
    *, spec: Mapping[str, Any] | None, progress: float, started_at: datetime
) -> datetime | None:
    """When a run that started at `started_at` with `progress` seconds done completes."""
    duration = spec_seconds(spec, "duration")
    if duration is None:
        return None
    return started_at + timedelta(seconds=max(duration - progress, 0.0))


def simulated_runs(backend: str) -> list[Completion]:
    """Every running workload with a simulated duration on the pools of `backend`, and
    when its run ends (one query)."""
    rows = (
        Workload.objects.filter(
            status=WorkloadStatus.RUNNING, started_at__isnull=False, spec__has_key="duration"
        )
        .filter(
            Exists(Allocation.objects.filter(workload=OuterRef("pk"), node__pool__backend=backend))
        )
        .values_list("pk", "started_at", "progress_seconds", "spec")
    )
    runs = []
    for pk, started_at, progress, spec in rows:
        assert started_at is not None  # (filtered)
        finish = due_at(spec=spec, progress=progress, started_at=started_at)
        if finish is not None:
            runs.append(Completion(pk, started_at, finish))
    return runs


def complete_runs_due(
    *, backend: str, now: datetime, request: bool = True
) -> tuple[int, list[Completion]]:
    """Complete every running workload of `backend`'s pools whose simulated duration is
    up at `now`; returns how many did and the runs still going (one read)."""
    if not settings.SIMULATED_RUNTIME:
        return 0, []
    runs = simulated_runs(backend)
    due = [run for run in runs if run.finished_at <= now]
    done = workloads_complete(completions=due, request=request) if due else []
    return len(done), [run for run in runs if run.finished_at > now]


def complete_due(*, backend: str, now: datetime | None = None, request: bool = True) -> int:
    """Complete every running workload of `backend`'s pools whose simulated duration is
    up; how many did."""
    return complete_runs_due(backend=backend, now=now or timezone.now(), request=request)[0]
