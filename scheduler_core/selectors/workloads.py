"""Workload reads."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from scheduler_core.models import Allocation, Workload, WorkloadCandidatePool


def workload_list(*, user) -> QuerySet[Workload]:
    """Workloads `user` may see, with what a list row shows, in a constant number of queries."""
    return (
        Workload.objects.visible_to(user)
        .select_related("project", "project__department", "submitted_by")
        .order_by("-submitted_at", "-id")
    )


def workloads_with_placements(qs: QuerySet[Workload]) -> QuerySet[Workload]:
    """Add pods (with nodes) and candidate pools, prefetched."""
    return qs.prefetch_related(
        Prefetch("allocations", queryset=Allocation.objects.select_related("node")),
        Prefetch("pool_choices", queryset=WorkloadCandidatePool.objects.select_related("pool")),
    )
