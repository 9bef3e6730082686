"""GPU usage over time: held against used, per pool, project, node or workload."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.serializers.usage import UsageHistorySerializer, UsageQuerySerializer
from api.views.base import ApiView
from scheduler_core.selectors.gpu_usage import WINDOWS, gpu_usage_history


class UsageView(ApiView):
    """GPU utilisation and memory over time, from the samples node agents send (docs/usage.md)."""

    validates_query = True  # a 400 names the parameter that is wrong

    @extend_schema(
        summary="GPUs held against GPUs used over time, and the idlest holders",
        parameters=[UsageQuerySerializer],
        responses={200: UsageHistorySerializer},
    )
    def get(self, request):
        query = UsageQuerySerializer(data=request.query_params, context={"request": request})
        query.is_valid(raise_exception=True)
        history = gpu_usage_history(
            user=request.user, scope=query.scope(), window=WINDOWS[query.validated_data["window"]],
            now=timezone.now(),
        )  # fmt: skip
        return Response(UsageHistorySerializer(history).data)
