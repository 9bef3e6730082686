"""The queue view ("why is my job pending")."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api.serializers.queues import PoolQueuesSerializer
from api.views.base import ApiViewSet
from api.views.org import NAME_IN_URL
from scheduler_core.models import NodePool
from scheduler_core.selectors.queues import PoolQueues, queue_overview

DEFAULT_PENDING_LIMIT = 100
MAX_PENDING_LIMIT = 1000

PENDING_LIMIT = OpenApiParameter(
    name="pending_limit",
    type=OpenApiTypes.INT,
    location=OpenApiParameter.QUERY,
    required=False,
    description=f"How many pending workloads to list per pool (default "
    f"{DEFAULT_PENDING_LIMIT}, at most {MAX_PENDING_LIMIT}); `pending_total` has them all.",
)
PROJECT = OpenApiParameter(
    name="project",
    type=OpenApiTypes.STR,
    location=OpenApiParameter.QUERY,
    required=False,
    description="Only this project's queue and pending workloads (by name).",
)


def _pending_limit(request) -> int:
    raw = request.query_params.get("pending_limit")
    if raw in (None, ""):
        return DEFAULT_PENDING_LIMIT
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(
            {"pending_limit": [f"must be a whole number, got {raw[:40]!r}"]}
        ) from None
    if not 0 <= value <= MAX_PENDING_LIMIT:
        raise ValidationError({"pending_limit": [f"must be 0 to {MAX_PENDING_LIMIT}, got {value}"]})
    return value


def _shape(queues: PoolQueues, *, limit: int, project: str | None) -> PoolQueues:
    if project:
        queues.projects = [r for r in queues.projects if r.name == project]
        parents = {r.parent for r in queues.projects}
        queues.departments = [r for r in queues.departments if r.name in parents]
        queues.pending = [w for w in queues.pending if w.project.name == project]
    queues.pending_total = len(queues.pending)
    queues.pending_page = queues.pending[:limit]
    return queues


class QueueViewSet(ApiViewSet):
    """Per pool: each department and project queue (deserved, limit, fairshare, allocated,
    pending demand) and the ordered pending workloads with their reasons."""

    noun = "pool"
    lookup_field = "name"
    lookup_value_regex = NAME_IN_URL
    serializer_class = PoolQueuesSerializer
    filter_backends: list = []

    def get_queryset(self):
        return NodePool.objects.all()

    def _overview(self, pool: NodePool | None) -> list[PoolQueues]:
        limit = _pending_limit(self.request)
        project = self.request.query_params.get("project") or None
        return [
            _shape(q, limit=limit, project=project)
            for q in queue_overview(user=self.request.user, pool=pool)
        ]

    @extend_schema(
        summary="Queues of every pool, as you may see them",
        parameters=[PENDING_LIMIT, PROJECT],
    )
    def list(self, request):
        page = self.paginate_queryset(self._overview(None))
        return self.get_paginated_response(PoolQueuesSerializer(page, many=True).data)

    @extend_schema(
        summary="Queues of one pool: why is my job pending?",
        parameters=[PENDING_LIMIT, PROJECT],
    )
    def retrieve(self, request, name=None):
        (queues,) = self._overview(self.get_object())
        return Response(PoolQueuesSerializer(queues).data)
