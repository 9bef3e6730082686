"""GPU allocation over time per project, rebuilt from scheduling events.

Each workload's events are replayed in order (allocated -> holding its GPUs; preempted,
a failed run, completed, failed, cancelled, suspended -> holding none), starting from
what runs now for workloads that started before the window. Two queries, whatever the
window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q

from scheduler_core.choices import PLACED_STATES, EventType
from scheduler_core.models import Allocation, NodePool, SchedulingEvent, Workload

STARTS = {EventType.ALLOCATED, EventType.EXPANDED, EventType.SHRUNK, EventType.MOVED}
STOPS = {
    EventType.PREEMPTED,
    EventType.RUN_FAILED,
    EventType.COMPLETED,
    EventType.FAILED,
    EventType.DELETED,
    EventType.SUSPENDED,
}
MAX_EVENTS = 20000


@dataclass
class AllocationHistory:
    """Sample times and, per project name, the GPUs it held at each sample."""

    times: list[datetime]
    series: dict[str, list[float]]

    @property
    def peak(self) -> float:
        totals = [sum(v[i] for v in self.series.values()) for i in range(len(self.times))]
        return max(totals, default=0.0)


def _held_gpus(workload: Workload, details: dict) -> float:
    pods = details.get("pods")
    if isinstance(pods, int) and not workload.groups:
        return pods * workload.gpus
    return workload.total_gpus


def allocation_history(
    *, user, now: datetime, window: timedelta, points: int = 60, pool: NodePool | None = None
) -> AllocationHistory:
    """GPUs held per visible project at `points` evenly spaced times over `window`."""
    since = now - window
    workloads = Workload.objects.visible_to(user)
    event_q = Q(created_at__gte=since, created_at__lte=now, type__in=STARTS | STOPS)
    if pool is not None:
        event_q &= Q(pool=pool)
    events = [
        (event, event.workload)
        for event in SchedulingEvent.objects.filter(event_q, workload__in=workloads.values("pk"))
        .select_related("workload", "workload__project")
        .order_by("created_at", "id")[:MAX_EVENTS]
        if event.workload is not None  # (always: filtered by workload)
    ]
    # Workloads holding GPUs since before the window, with what they hold now.
    held_now: dict[int, tuple[str, float]] = {}
    running = Allocation.objects.filter(
        workload__in=workloads.filter(status__in=PLACED_STATES, started_at__lt=since).values("pk")
    ).select_related("workload__project")
    if pool is not None:
        running = running.filter(node__pool=pool)
    for alloc in running:
        name, gpus = held_now.get(alloc.workload_id, (alloc.workload.project.name, 0.0))
        held_now[alloc.workload_id] = (name, gpus + len(alloc.gpu_devices) * alloc.gpu_fraction)

    step = window / max(points - 1, 1)
    times = [since + step * i for i in range(points)]
    holding: dict[int, tuple[str, float]] = dict(held_now)
    projects = {name for name, _ in holding.values()} | {w.project.name for _, w in events}
    series: dict[str, list[float]] = {name: [] for name in sorted(projects)}
    cursor = 0
    for t in times:
        while cursor < len(events) and events[cursor][0].created_at <= t:
            event, workload = events[cursor]
            if event.type in STARTS:
                holding[workload.pk] = (
                    workload.project.name,
                    _held_gpus(workload, event.details or {}),
                )
            else:
                holding.pop(workload.pk, None)
            cursor += 1
        totals = dict.fromkeys(series, 0.0)
        for name, gpus in holding.values():
            totals[name] += gpus
        for name, value in totals.items():
            series[name].append(round(value, 2))
    return AllocationHistory(times=times, series=series)
