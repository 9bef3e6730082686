"""The event stream: what happened, newest first, cursor-paginated."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view

from api.filters import EventFilter
from api.pagination import EventCursorPagination
from api.serializers.events import EventSerializer
from api.views.base import ApiViewSet
from scheduler_core.models import SchedulingEvent
from scheduler_core.selectors.event_feed import events_as_seen_by


def event_queryset(user):
    """Events `user` may see, with the names a row shows."""
    return SchedulingEvent.objects.visible_to(user).select_related(
        "project", "department", "workload", "pool", "node"
    )


def event_page(view, queryset):
    """One page of `queryset` as `view`'s user may see it, as a paginated response."""
    page = events_as_seen_by(view.paginate_queryset(queryset), view.request.user)
    return view.get_paginated_response(EventSerializer(page, many=True).data)


@extend_schema_view(
    list=extend_schema(
        summary="Scheduling events you can see, newest first",
        description="Follow `next` to page back in time; the cursor stays stable while new "
        "events arrive.",
    )
)
class EventViewSet(ApiViewSet):
    """Scheduling events."""

    noun = "event"
    serializer_class = EventSerializer
    pagination_class = EventCursorPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = EventFilter

    def get_queryset(self):
        return event_queryset(self.request.user)

    def list(self, request):
        return event_page(self, self.filter_queryset(self.get_queryset()))
