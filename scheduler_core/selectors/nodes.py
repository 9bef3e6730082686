"""Node reads: nodes with the pods on them, and who may see which pods."""

from __future__ import annotations

from django.db.models import Count, Prefetch, QuerySet, Sum
from django.db.models.functions import Coalesce

from scheduler_core import access
from scheduler_core.models import Allocation, Node, NodePool


def node_list(*, user) -> QuerySet[Node]:
    """Nodes `user` may see, each with its pods prefetched as `prefetched_allocations`."""
    return (
        Node.objects.visible_to(user)
        .select_related("pool")
        .prefetch_related(
            Prefetch(
                "allocations",
                queryset=Allocation.objects.select_related("workload__project").order_by(
                    "workload_id", "group", "pod_index"
                ),
                to_attr="prefetched_allocations",
            )
        )
    )


def pool_list(*, user) -> QuerySet[NodePool]:
    """Pools with their node and GPU counts (every signed-in user sees the pools)."""
    qs = NodePool.objects.annotate(
        node_count=Count("nodes"), gpu_count=Coalesce(Sum("nodes__gpu_count"), 0)
    )
    return qs if access.is_authenticated(user) else qs.none()
