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
        values = dict(self.input(QuotaSetSerializer))
        pool = values.pop("pool")
        existed = Quota.objects.filter(
            pool=pool,
            department=values.get("department"),
            project=values.get("project"),
        ).exists()
        quota = self._set(pool=pool, values=values)
        return Response(self._fresh(quota), status=200 if existed else status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a quota's values",
        request=QuotaValuesSerializer,
        responses={200: QuotaSerializer},
    )
    def partial_update(self, request, pk=None):
        quota = self.get_object()
        values = dict(self.input(QuotaValuesSerializer, partial=True))
        owner = {"project": quota.project} if quota.project_id else {"department": quota.department}
        return Response(self._fresh(self._set(pool=quota.pool, values={**values, **owner})))

    def _set(self, *, pool, values: dict) -> Quota:
        if "project" in values and values["project"] is not None:
            return quotas.project_set_quota(user=self.request.user, pool=pool, **values)
        values.pop("project", None)
        return quotas.department_set_quota(user=self.request.user, pool=pool, **values)
