"""Cluster totals for dashboards."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.serializers.overview import OverviewSerializer
from api.views.base import ApiView
from scheduler_core.selectors.cluster import cluster_overview


class OverviewView(ApiView):
    """Totals for the whole cluster and per pool."""

    @extend_schema(
        summary="Cluster totals per pool (GPUs, nodes, running and pending workloads)",
        responses={200: OverviewSerializer},
    )
    def get(self, request):
        return Response(OverviewSerializer(cluster_overview()).data)
