"""Events: the live, filterable feed of what the scheduler and users did, searchable, within
a time range, paged to older events by a cursor."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required

from console.forms import EventFilterForm
from console.views.common import is_htmx, live_names, page
from scheduler_core.models import Project
from scheduler_core.selectors.event_feed import event_feed, event_page, events_as_seen_by

FEED_SIZE = 150


@login_required
def events(request):
    projects = Project.objects.visible_to(request.user).order_by("name")
    form = EventFilterForm(request.GET or None, projects=projects)
    filters = form.cleaned_data if form.is_valid() else {}
    project = filters.get("project")
    pool = filters.get("pool")
    feed, older = event_page(
        event_feed(
            user=request.user,
            types=[filters["type"]] if filters.get("type") else None,
            project_id=project.pk if project else None,
            pool_id=pool.pk if pool else None,
        ),
        size=FEED_SIZE,
        text=(filters.get("q") or "").strip(),
        start=filters.get("start"),
        end=filters.get("end"),
        before=filters.get("before"),
    )
    group = f"project-{project.pk}" if project else f"pool-{pool.pk}" if pool else "cluster"
    query = request.GET.copy()
    for key in ("before", "fragment"):
        query.pop(key, None)
    # New events are prepended only where they belong: the newest page, no end of range, no
    # search (the live feed cannot match words).
    live = not (filters.get("before") or filters.get("end") or filters.get("q"))
    template = (
        "console/partials/_event_rows.html"
        if is_htmx(request) and request.GET.get("fragment") == "rows"
        else "console/events.html"
    )
    return page(
        request,
        template,
        "events",
        {
            "form": form,
            "events": events_as_seen_by(feed, request.user),
            "group": group,
            "filter_type": filters.get("type") or "",
            "filter_project": project.pk if project else "",
            "filter_pool": pool.pk if pool else "",
            "names": live_names(request.user),
            "feed_size": FEED_SIZE,
            "older": older,
            "query": query.urlencode(),
            "paged": bool(filters.get("before")),
            "live": live,
        },
    )
