"""Event feeds: the live events page, a workload's timeline, recent preemptions, the work
preemptions and moves threw away.

Events are read as their viewer may see them (live_events.other_side): call
`events_as_seen_by` on what a page shows."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import FloatField, Q, QuerySet, Subquery, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from scheduler_core import access
from scheduler_core.choices import EventType
from scheduler_core.live_events.other_side import as_seen_by, names_another_project
from scheduler_core.models import SchedulingEvent, Workload


def event_feed(
    *,
    user,
    types: list[str] | None = None,
    project_id: int | None = None,
    pool_id: int | None = None,
    workload_id: int | None = None,
) -> QuerySet[SchedulingEvent]:
    """Newest first, filtered by access and by what the user picked (1 query when sliced).
    Pass what is shown through `events_as_seen_by`."""
    qs = SchedulingEvent.objects.visible_to(user).select_related(
        "workload", "project", "department", "pool", "node"
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


def event_page(
    qs: QuerySet[SchedulingEvent],
    *,
    size: int,
    text: str = "",
    start: datetime | None = None,
    end: datetime | None = None,
    before: int | None = None,
) -> tuple[list[SchedulingEvent], int | None]:
    """One page of a newest-first feed: events matching `text` (in the reason or the
    workload's name) between `start` and `end`, older than the event `before` (the cursor);
    returns them and the cursor of the next (older) page, None at the end (2 queries)."""
    if text:
        qs = qs.filter(Q(reason__icontains=text) | Q(workload__name__icontains=text))
    if start is not None:
        qs = qs.filter(created_at__gte=start)
    if end is not None:
        qs = qs.filter(created_at__lte=end)
    if before is not None:
        # keyed by (created_at, id), the feed's order, so a page never skips or repeats one
        cursor = SchedulingEvent.objects.filter(pk=before).values("created_at")[:1]
        qs = qs.filter(
            Q(created_at__lt=Subquery(cursor)) | Q(created_at=Subquery(cursor), pk__lt=before)
        )
    events = list(qs[: size + 1])
    more = len(events) > size
    events = events[:size]
    return events, (events[-1].pk if more and events else None)


def events_as_seen_by(events: Iterable[SchedulingEvent], user) -> list[SchedulingEvent]:
    """`events` (read for display, never saved) with what they say about another project's
    workload left out where `user` may not see that project: one query at most, and none
    unless an event names another project."""
    events = list(events)
    naming = [e for e in events if names_another_project(e.type, e.project_id, e.details, e.reason)]
    if naming:
        project_ids = access.visible_project_ids(user)
        for event in naming:
            event.reason, event.details = as_seen_by(
                project_ids,
                type=event.type,
                project_id=event.project_id,
                reason=event.reason,
                details=event.details,
            )
    return events


def recent_preemptions(*, user, limit: int = 8) -> list[SchedulingEvent]:
    """The last preemptions the user may see, with why."""
    return events_as_seen_by(event_feed(user=user, types=[EventType.PREEMPTED])[:limit], user)


def lost_gpu_hours(*, user, since: datetime) -> float:
    """GPU-hours that preemptions and moves of the workloads the user may see threw away
    since `since` (their events' lost_gpu_seconds; one query)."""
    lost = Cast(KeyTextTransform("lost_gpu_seconds", "details"), FloatField())
    total = (
        SchedulingEvent.objects.visible_to(user)
        .filter(type__in=[EventType.PREEMPTED, EventType.MOVED], created_at__gte=since)
        .aggregate(total=Sum(lost))["total"]
    )
    return round((total or 0.0) / 3600, 1)


def workload_timeline(workload: Workload, *, user) -> list[SchedulingEvent]:
    """A workload's events, oldest first (callers check the user may see the workload)."""
    return events_as_seen_by(
        SchedulingEvent.objects.filter(workload=workload)
        .select_related("pool", "node")
        .order_by("created_at", "id"),
        user,
    )
