"""GPU usage over time (docs/usage.md): GPUs held against GPUs actually used, and GPU memory,
for the whole cluster or a pool, project, node or workload, over a window (1 h, 24 h, 7 d);
and which workloads held GPUs while leaving them idle. Read from GpuUsageRollup (built by
services.gpu_usage), filtered by the access rule: a user sees the rows of the projects she
may see and the unheld part of every device. Three queries, whatever the window."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from scheduler_core.models import GpuUsageRollup, Node, NodePool, Project, Workload
from scheduler_core.usage_buckets import HOUR, MINUTE, floor_time, rolled_until


@dataclass(frozen=True)
class Window:
    """A choice of time span and the step between two points of its charts."""

    key: str
    label: str
    span: timedelta
    step: int  # seconds


WINDOWS = {
    w.key: w
    for w in (
        Window("1h", "1 hour", timedelta(hours=1), MINUTE),
        Window("24h", "24 hours", timedelta(hours=24), 15 * MINUTE),
        Window("7d", "7 days", timedelta(days=7), HOUR),
    )
}
DEFAULT_WINDOW = "1h"
IDLEST_HOLDERS = 10
SCOPE_FIELDS = ("pool", "project", "node", "workload")


@dataclass(frozen=True)
class UsageScope:
    """What the figures cover: everything visible, narrowed by any of these."""

    pool: NodePool | None = None
    project: Project | None = None
    node: Node | None = None
    workload: Workload | None = None

    def q(self) -> Q:
        narrowed = Q()
        for name in SCOPE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                narrowed &= Q(**{name: value})
        return narrowed


@dataclass(frozen=True)
class UsagePoint:
    """Mean figures over one step of the chart."""

    start: datetime
    held_gpus: float
    used_gpus: float
    memory_used_mib: float
    memory_total_mib: float

    @property
    def idle_gpus(self) -> float:
        return max(self.held_gpus - self.used_gpus, 0.0)

    @property
    def utilization(self) -> float | None:
        """GPUs used per GPU held, in percent (None when none was held)."""
        return 100.0 * self.used_gpus / self.held_gpus if self.held_gpus > 1e-9 else None


@dataclass(frozen=True)
class Holder:
    """A workload that held GPUs in the window: GPU-hours held and used."""

    workload_id: int
    workload_name: str
    project_name: str
    gpu_hours: float
    used_gpu_hours: float

    @property
    def idle_gpu_hours(self) -> float:
        return max(self.gpu_hours - self.used_gpu_hours, 0.0)

    @property
    def utilization(self) -> float:
        return 100.0 * self.used_gpu_hours / self.gpu_hours if self.gpu_hours > 1e-9 else 0.0


@dataclass(frozen=True)
class UsageHistory:
    """Points evenly spaced over the window (none after the last rolled-up bucket), the
    holders that left the most GPU-hours idle first, and the resolution read."""

    window: Window
    resolution: int
    points: list[UsagePoint]
    holders: list[Holder]

    @property
    def gpu_hours(self) -> float:
        return sum(p.held_gpus for p in self.points) * self.window.step / 3600

    @property
    def used_gpu_hours(self) -> float:
        return sum(p.used_gpus for p in self.points) * self.window.step / 3600


def resolution_for(window: Window) -> int:
    """Minute rows while they are kept for the whole window, else hour rows."""
    if window.span.total_seconds() <= float(settings.GPU_USAGE_MINUTE_RETENTION) and (
        window.step < HOUR
    ):
        return MINUTE
    return HOUR


def usage_rows(*, user, scope: UsageScope) -> QuerySet[GpuUsageRollup]:
    """The rollup rows of `scope` that `user` may see."""
    return GpuUsageRollup.objects.visible_to(user).filter(scope.q())


FIGURES = {
    "held": "held_gpus",
    "used": "used_gpus",
    "memory_used": "memory_used_mib",
    "memory_total": "memory_total_mib",
}


def _points(
    sums: Mapping[datetime, Mapping[str, float]], since: datetime, window: Window, done: datetime,
    resolution: int,
) -> list[UsagePoint]:  # fmt: skip
    """Display steps from `since`, each the mean of its rolled-up buckets (absent ones: 0)."""
    points = []
    start = since
    end = since + window.span
    while start < min(end, done):
        step_end = start + timedelta(seconds=window.step)
        buckets = max((min(step_end, done) - start).total_seconds() / resolution, 1.0)
        total = dict.fromkeys(FIGURES, 0.0)
        t = start
        while t < step_end:
            for name, value in sums.get(t, {}).items():
                total[name] += value
            t += timedelta(seconds=resolution)
        points.append(
            UsagePoint(
                start, total["held"] / buckets, total["used"] / buckets,
                total["memory_used"] / buckets, total["memory_total"] / buckets,
            )
        )  # fmt: skip
        start = step_end
    return points


def _idlest_holders(rows: QuerySet[GpuUsageRollup], resolution: int) -> list[Holder]:
    hours = resolution / 3600
    found = (
        rows.filter(workload__isnull=False)
        .values("workload_id", "workload__name", "project__name")
        .annotate(held=Sum("held_gpus"), used=Sum("used_gpus"))
        .filter(held__gt=0)
        .order_by(F("used") - F("held"), "workload_id")[:IDLEST_HOLDERS]
    )
    return [
        Holder(
            r["workload_id"], r["workload__name"], r["project__name"] or "",
            r["held"] * hours, r["used"] * hours,
        )
        for r in found
    ]  # fmt: skip


def gpu_usage_history(*, user, scope: UsageScope, window: Window, now: datetime) -> UsageHistory:
    """`scope`'s GPUs held and used and its memory over `window` up to `now`, as `user` may
    see them, with the idlest holders (IDLEST_HOLDERS at most)."""
    resolution = resolution_for(window)
    since = floor_time(now, window.step) + timedelta(seconds=window.step) - window.span
    rows = usage_rows(user=user, scope=scope).filter(resolution=resolution, start__gte=since)
    grouped: Any = (
        rows.values("start")
        .annotate(**{name: Sum(field) for name, field in FIGURES.items()})
        .order_by()
    )
    sums: dict[datetime, dict[str, float]] = {
        r["start"]: {name: r[name] or 0.0 for name in FIGURES} for r in grouped
    }
    done = rolled_until(resolution) or since
    points = _points(sums, since, window, done, resolution)
    return UsageHistory(window, resolution, points, _idlest_holders(rows, resolution))


@dataclass(frozen=True)
class ProjectMinute:
    """A project's (or nobody's: project "") GPUs held and used in a pool, one minute."""

    pool: str
    project: str
    held_gpus: float
    used_gpus: float


FRESH_MINUTE = timedelta(minutes=5)


def latest_minute_by_project(now: datetime | None = None) -> list[ProjectMinute]:
    """Every pool's and project's figures in the newest rolled-up minute, when it is under
    FRESH_MINUTE old (for /metrics, which every system admin or scraper reads). One query."""
    now = now or timezone.now()
    newest = (
        GpuUsageRollup.objects.filter(resolution=MINUTE, start__gte=now - FRESH_MINUTE)
        .order_by("-start")
        .values("start")[:1]
    )
    rows = (
        GpuUsageRollup.objects.filter(resolution=MINUTE, start=Subquery(newest))
        .values_list("pool__name", "project__name")
        .annotate(held=Sum("held_gpus"), used=Sum("used_gpus"))
        .order_by("pool__name", "project__name")
    )
    return [ProjectMinute(pool, project or "", held, used) for pool, project, held, used in rows]
