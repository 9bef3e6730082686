"""The simulated runtime, node heartbeats and GPU usage accounting.

Simulated runtime (settings.SIMULATED_RUNTIME, the default): a running workload whose spec
has `duration` completes that many seconds of progress after it (re)starts. An evicted or
moved workload starts over, or from its last checkpoint when its spec says
`checkpoint_every: N` (progress is kept in Workload.progress_seconds).

Heartbeats: a node silent for settings.NODE_HEARTBEAT_TIMEOUT seconds is marked down (its
workloads are evicted as a fault). With settings.SIMULATED_NODES the tick refreshes every
live node's heartbeat, so simulated nodes only go down when an admin says so.

Usage: every settings.USAGE_SAMPLE_INTERVAL seconds the cycle writes one UsageSample per
project and department per pool (GPUs held now x seconds since the last sample), which
time-based fairshare reads back.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import F, Max
from django.db.models.functions import Coalesce
from django.utils import timezone

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.models import CycleRecord, IdempotencyKey, Node, NodePool, UsageSample, Workload
from scheduler_core.services.cluster import node_mark_down
from scheduler_core.services.runtime import Completion, workloads_complete

# --- simulated runtime ---------------------------------------------------------------------


def spec_seconds(spec: dict[str, Any] | None, key: str) -> float | None:
    """A positive number of seconds from a workload spec (None when absent or invalid)."""
    value = (spec or {}).get(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def due_at(
    *, spec: dict[str, Any] | None, progress: float, started_at: datetime
) -> datetime | None:
    """When a run that started at `started_at` with `progress` seconds done completes."""
    duration = spec_seconds(spec, "duration")
    if duration is None:
        return None
    return started_at + timedelta(seconds=max(duration - progress, 0.0))


def progress_kept(
    *,
    spec: dict[str, Any] | None,
    progress: float,
    started_at: datetime | None,
    stopped_at: datetime,
) -> float:
    """Progress a workload keeps when its run stops early: its last checkpoint, else 0."""
    every = spec_seconds(spec, "checkpoint_every")
    if every is None or started_at is None:
        return 0.0
    done = progress + max((stopped_at - started_at).total_seconds(), 0.0)
    duration = spec_seconds(spec, "duration")
    if duration is not None:
        done = min(done, duration)
    return max(progress, math.floor(done / every + 1e-9) * every)


def simulated_runs() -> list[Completion]:
    """Every running workload with a simulated duration, and when its run ends (one query)."""
    rows = Workload.objects.filter(
        status=WorkloadStatus.RUNNING, started_at__isnull=False, spec__has_key="duration"
    ).values_list("pk", "started_at", "progress_seconds", "spec")
    runs = []
    for pk, started_at, progress, spec in rows:
        finish = due_at(spec=spec, progress=progress, started_at=started_at)
        if finish is not None:
            runs.append(Completion(pk, started_at, finish))
    return runs


def complete_runs_due(*, now: datetime, request: bool = True) -> tuple[int, list[Completion]]:
    """Complete every running workload whose simulated duration is up at `now`; returns how
    many did and the runs still going (one read of the running workloads)."""
    if not settings.SIMULATED_RUNTIME:
        return 0, []
    runs = simulated_runs()
    due = [run for run in runs if run.finished_at <= now]
    done = workloads_complete(completions=due, request=request) if due else []
    return len(done), [run for run in runs if run.finished_at > now]


def complete_due(*, now: datetime | None = None, request: bool = True) -> int:
    """Complete every running workload whose simulated duration is up; how many did."""
    return complete_runs_due(now=now or timezone.now(), request=request)[0]


# --- heartbeats ----------------------------------------------------------------------------


def refresh_simulated_heartbeats(now: datetime) -> int:
    """Simulated nodes report alive every tick (down ones stay down)."""
    return Node.objects.exclude(state=NodeState.DOWN).update(last_heartbeat=now)


def mark_silent_nodes_down(now: datetime) -> list[Node]:
    """Mark down every live node silent for NODE_HEARTBEAT_TIMEOUT seconds."""
    timeout = settings.NODE_HEARTBEAT_TIMEOUT
    cutoff = now - timedelta(seconds=timeout)
    silent = (
        Node.objects.exclude(state=NodeState.DOWN)
        .annotate(seen=Coalesce(F("last_heartbeat"), F("created_at")))
        .filter(seen__lt=cutoff)
        .select_related("pool")
    )
    return [
        node_mark_down(node=node, reason=f"node {node.name} sent no heartbeat for {timeout:g} s")
        for node in silent
    ]


# --- usage accounting ----------------------------------------------------------------------


def usage_due(now: datetime) -> datetime | None:
    """Start of the usage interval to record now, or None when the last one is recent."""
    last_end = UsageSample.objects.aggregate(last=Max("interval_end"))["last"]
    interval = timedelta(seconds=settings.USAGE_SAMPLE_INTERVAL)
    if last_end is None:
        return now - interval
    if now - last_end < interval:
        return None
    # After downtime, count at most two intervals: nobody knows what ran meanwhile.
    return max(last_end, now - 2 * interval)


def record_usage(
    *, start: datetime, end: datetime, held: Iterable[tuple[int, int, int, float]]
) -> list[UsageSample]:
    """Write usage samples for [start, end) from GPUs held now.

    `held` yields (pool_id, department_id, project_id, gpus) per running pod.
    """
    seconds = (end - start).total_seconds()
    if seconds <= 0:
        return []
    projects: dict[tuple[int, int], float] = defaultdict(float)
    departments: dict[tuple[int, int], float] = defaultdict(float)
    for pool_id, department_id, project_id, gpus in held:
        projects[(pool_id, project_id)] += gpus
        departments[(pool_id, department_id)] += gpus
    samples = [
        UsageSample(
            pool_id=pool_id,
            project_id=owner,
            interval_start=start,
            interval_end=end,
            gpu_seconds=gpus * seconds,
        )
        for (pool_id, owner), gpus in projects.items()
    ] + [
        UsageSample(
            pool_id=pool_id,
            department_id=owner,
            interval_start=start,
            interval_end=end,
            gpu_seconds=gpus * seconds,
        )
        for (pool_id, owner), gpus in departments.items()
    ]
    return UsageSample.objects.bulk_create(samples)


# --- housekeeping and the tick -------------------------------------------------------------


def prune_history(now: datetime) -> None:
    """Drop cycle records and idempotency keys past their retention, and usage older than
    every pool's window."""
    CycleRecord.objects.filter(
        started_at__lt=now - timedelta(seconds=settings.CYCLE_RECORD_RETENTION)
    ).delete()
    longest = NodePool.objects.aggregate(w=Max("time_based_window"))["w"] or 0
    UsageSample.objects.filter(interval_end__lt=now - timedelta(seconds=longest)).delete()
    IdempotencyKey.objects.filter(
        created_at__lt=now - timedelta(seconds=settings.IDEMPOTENCY_KEY_RETENTION)
    ).delete()


def _prune_now() -> bool:
    """True at most once a minute across all workers."""
    return cache.add(f"{settings.SCHEDULER_KEY_PREFIX}:prune", 1, timeout=60)


@dataclass
class TickReport:
    """What one runtime tick did."""

    completed: int = 0
    nodes_down: list[str] = field(default_factory=list)


def tick(now: datetime | None = None) -> TickReport:
    """One runtime tick: heartbeats, silent nodes, simulated completions, housekeeping.

    Completions and node failures go through services, which request a cycle.
    """
    now = now or timezone.now()
    report = TickReport()
    if settings.SIMULATED_NODES:
        refresh_simulated_heartbeats(now)
    report.nodes_down = [n.name for n in mark_silent_nodes_down(now)]
    report.completed = complete_due(now=now)
    if _prune_now():
        prune_history(now)
    return report
