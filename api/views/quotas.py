"""Per-pool quotas of departments and projects."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.response import Response

from api.filters import QuotaFilter
from api.serializers.quotas import QuotaSerializer, QuotaSetSerializer, QuotaValuesSerializer
from api.views.base import ApiViewSet
from scheduler_core.models import Quota
from scheduler_core.services import quotas


@extend_schema_view(
    list=extend_schema(summary="List the quotas you can see"),
    retrieve=extend_schema(summary="Show a quota"),
)
class QuotaViewSet(ApiViewSet):
    """Deserved quotas and limits per pool. Department admins set their projects' quotas;
    system admins set everyone's."""

    noun = "quota"
    lookup_value_regex = r"[0-9]+"
    serializer_class = QuotaSerializer
    filterset_class = QuotaFilter
    ordering_fields = ["gpus", "updated_at", "id"]
    ordering = ["pool__name", "department__name", "project__name"]

    def get_queryset(self):
        return Quota.objects.visible_to(self.request.user).select_related(
            "pool", "department", "project__department"
        )

    def _fresh(self, quota: Quota) -> dict:
        return QuotaSerializer(self.get_queryset().get(pk=quota.pk)).data

    def list(self, request):
        return self.page(self.get_queryset(), QuotaSerializer)

    def retrieve(self, request, pk=None):
        return Response(QuotaSerializer(self.get_object()).data)

    @extend_schema(
        summary="Set a department's or project's quota in a pool",
        description="Creates the quota if the owner has none in that pool (201), otherwise "
        "changes the values given (200). Omitted values stay as they are; a null limit "
        "removes it.",
        request=QuotaSetSerializer,
        responses={
            200: OpenApiResponse(QuotaSerializer, description="The quota was changed."),
            201: OpenApiResponse(QuotaSerializer, description="The quota was created."),
        },
    )
    def create(self, request):
        values = self.input(QuotaSetSerializer)
        existed = Quota.objects.for_owner(values["owner"]).filter(pool=values["pool"]).exists()
        quota = quotas.queue_owner_set_quota(user=request.user, **values)
        return Response(self._fresh(quota), status=200 if existed else status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a quota's values",
        request=QuotaValuesSerializer,
        responses={200: QuotaSerializer},
    )
    def partial_update(self, request, pk=None):
        quota = self.get_object()
        quota = quotas.queue_owner_set_quota(
            user=request.user,
            owner=quota.owner,
            pool=quota.pool,
            **self.input(QuotaValuesSerializer, partial=True),
        )
        return Response(self._fresh(quota))
