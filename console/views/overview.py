"""Overview: GPUs per pool, quota vs allocation vs fairshare, recent preemptions, and GPU
allocation over time per project."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone

from console.charts import Series, stacked_area
from console.views.common import page
from scheduler_core import selectors
from scheduler_core.models import Project, SchedulingEvent
from scheduler_core.selectors.allocation_history import allocation_history
from scheduler_core.selectors.event_feed import lost_gpu_hours, recent_preemptions
from scheduler_core.selectors.queues import PoolQueues, QueueRow

WINDOWS = {
    "auto": None,
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
}
DEFAULT_WINDOW = "auto"
AUTO_MIN, AUTO_MAX = timedelta(minutes=5), timedelta(hours=24)


def _auto_window(now) -> timedelta:
    """From the first event on (a young cluster's chart is not a sliver), 5 min to 24 h."""
    first = SchedulingEvent.objects.order_by("created_at").values_list("created_at", flat=True)
    start = first.first()
    if start is None:
        return AUTO_MIN
    return min(max(now - start, AUTO_MIN), AUTO_MAX)


@dataclass
class PoolQueueGroups:
    """A pool's queues grouped for display: each department row followed by its projects."""

    pool: object
    groups: list[tuple[QueueRow | None, list[QueueRow]]]

    @property
    def scale(self) -> float:
        """One scale for every bar of the pool, so bars compare across rows."""
        rows = [r for d, projects in self.groups for r in ([d] if d else []) + projects]
        return max(
            (max(r.allocated_gpus, r.deserved_gpus, r.fairshare_gpus) for r in rows), default=1.0
        )


def group_queues(queues: list[PoolQueues]) -> list[PoolQueueGroups]:
    """Projects under their department; projects whose department row is not shown last."""
    result = []
    for q in queues:
        names = {d.name for d in q.departments}
        groups: list[tuple[QueueRow | None, list[QueueRow]]] = [
            (d, [p for p in q.projects if p.parent == d.name]) for d in q.departments
        ]
        orphans = [p for p in q.projects if p.parent not in names]
        if orphans:
            groups.append((None, orphans))
        result.append(PoolQueueGroups(pool=q.pool, groups=groups))
    return result


def _context(request) -> dict:
    user = request.user
    window_key = request.GET.get("window", DEFAULT_WINDOW)
    if window_key not in WINDOWS:
        window_key = DEFAULT_WINDOW
    cluster = selectors.cluster_overview()
    now = timezone.now()
    window = WINDOWS[window_key] or _auto_window(now)
    history = allocation_history(user=user, now=now, window=window)
    project_ids = dict(Project.objects.visible_to(user).values_list("name", "pk"))
    series = [
        Series(label=name, colour=f"var(--p{project_ids.get(name, 0) % 10})", values=values)
        for name, values in history.series.items()
    ]
    return {
        "cluster": cluster,
        "gpus_free": round(cluster["gpus_total"] - cluster["gpus_allocated"], 2),
        "queue_groups": group_queues(selectors.queue_overview(user=user)),
        "preemptions": recent_preemptions(user=user, limit=8),
        "lost_gpu_hours": lost_gpu_hours(user=user, since=now - window),
        "chart": stacked_area(
            [f"{t:%H:%M}" for t in history.times], series, capacity=cluster["gpus_total"] or None
        ),
        "chart_series": [(s, project_ids.get(s.label)) for s in series if any(s.values)],
        "window": window_key,
        "window_label": window_key if window_key != "auto" else _label(window),
        "windows": list(WINDOWS),
    }


def _label(window: timedelta) -> str:
    minutes = int(window.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"


@login_required
def overview(request):
    return page(request, "console/overview.html", "overview", _context(request))


@login_required
def overview_live(request):
    """The live region of the overview, re-fetched when events arrive."""
    return render(request, "console/partials/_overview_live.html", _context(request))
