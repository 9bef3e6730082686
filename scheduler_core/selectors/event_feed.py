"""Event feeds: the live events page, a workload's timeline, recent preemptions."""

from __future__ import annotations

from django.db.models import QuerySet

from scheduler_core.choices import EventType
from scheduler_core.models import SchedulingEvent, Workload


def event_feed(
    *,
    user,
    types: list[str] | None = None,
    project_id: int | None = None,
    pool_id: int | None = None,
    workload_id: int | None = None,
) -> QuerySet[SchedulingEvent]:
    """Newest first, filtered by access and by what the user picked (1 query when sliced)."""
    qs = SchedulingEvent.objects.visible_to(user).select_related(
        "workload", "project", "pool", "node"
    )
    if types:
        qs = qs.filter(type__in=types)
    if project_id:
        qs = qs.filter(project_id=project_id)
    if pool_id:
        qs = qs.filter(pool_id=pool_id)
    if workload_id:
        qs = qs.filter(workload_id=workload_id)
    return qs.order_by("-created_at", "-id")


def recent_preemptions(*, user, limit: int = 8) -> list[SchedulingEvent]:
    """The last preemptions the user may see, with why."""
    return list(event_feed(user=user, types=[EventType.PREEMPTED])[:limit])


def workload_timeline(workload: Workload) -> list[SchedulingEvent]:
    """A workload's events, oldest first (callers check the user may see the workload)."""
    return list(
        SchedulingEvent.objects.filter(workload=workload)
        .select_related("pool", "node")
        .order_by("created_at", "id")
    )
