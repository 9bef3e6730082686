"""The event stream: what happened, newest first, cursor-paginated."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view

from api.filters import EventFilter
from api.pagination import EventCursorPagination
from api.serializers.events import EventSerializer
from api.views.base import ApiViewSet
from scheduler_core.models import SchedulingEvent


def event_queryset(user):
    """Events `user` may see, with the names a row shows."""
    return SchedulingEvent.objects.visible_to(user).select_related(
        "project", "workload", "pool", "node"
    )


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
        return self.page(self.get_queryset(), EventSerializer)
