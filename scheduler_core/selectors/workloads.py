"""Workload reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import (
    Case,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Prefetch,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Allocation, NodePool, Workload, WorkloadCandidatePool


def workload_list(*, user) -> QuerySet[Workload]:
    """Workloads `user` may see, with what a list row shows, in a constant number of queries."""
    return (
        Workload.objects.visible_to_by_ids(user)
        .select_related("project", "project__department", "submitted_by")
        .order_by("-submitted_at", "-id")
    )


def workloads_with_placements(qs: QuerySet[Workload]) -> QuerySet[Workload]:
    """Add pods (with nodes) and candidate pools, prefetched."""
    return qs.prefetch_related(
        Prefetch("allocations", queryset=Allocation.objects.select_related("node")),
        Prefetch("pool_choices", queryset=WorkloadCandidatePool.objects.select_related("pool")),
    )


def as_just_submitted(workload: Workload, pools: Sequence[NodePool]) -> Workload:
    """A workload this request has just submitted, with what `workloads_with_placements` and
    `selectors.ports.with_open_ports` would prefetch (no pods and no runs yet, the candidate
    pools it was given) set in place of reading it all again: a submission's answer cost
    as much as the submission."""
    choices = [
        WorkloadCandidatePool(workload=workload, pool=pool, preference=i)
        for i, pool in enumerate(pools)
    ]
    # what prefetch_related leaves: each relation's queryset with its rows in its cache
    workload._prefetched_objects_cache = {  # type: ignore[attr-defined]
        "allocations": _filled(Allocation.objects.none(), []),
        "pool_choices": _filled(WorkloadCandidatePool.objects.none(), choices),
    }
    workload.running_runs = []  # type: ignore[attr-defined]
    return workload


def _filled(qs: QuerySet[Any], rows: list[Any]) -> QuerySet[Any]:
    qs._result_cache = rows  # type: ignore[attr-defined]
    qs._prefetch_done = True  # type: ignore[attr-defined]
    return qs


def workload_list_rows(qs: QuerySet[Workload]) -> QuerySet[Workload]:
    """What a row of the workloads list shows, for sorting and display in a constant number
    of queries: pods with their nodes and pools, candidate pools, `gpu_total` (GPUs asked of
    the main pod group) and `run_time` (of its last run: since it started, until it
    finished or now; None while it waits, also after a run that was preempted)."""
    run_end = Coalesce(F("finished_at"), Value(timezone.now()), output_field=DateTimeField())
    waiting = (WorkloadStatus.PENDING, WorkloadStatus.SUSPENDED)
    return qs.annotate(
        gpu_total=ExpressionWrapper(F("gpus") * F("pods"), output_field=FloatField()),
        run_time=Case(
            When(status__in=waiting, then=Value(None)),
            default=ExpressionWrapper(run_end - F("started_at"), output_field=DurationField()),
            output_field=DurationField(),
        ),
    ).prefetch_related(
        Prefetch("allocations", queryset=Allocation.objects.select_related("node__pool")),
        Prefetch("pool_choices", queryset=WorkloadCandidatePool.objects.select_related("pool")),
    )


def pools_of(workload: Workload) -> list[str]:
    """Names of the pools a listed workload runs in, else those it may run in (prefetched)."""
    placed = {a.node.pool.name for a in workload.allocations.all()}
    if placed:
        return sorted(placed)
    return sorted(c.pool.name for c in workload.pool_choices.all())


def workload_ids_in_pool(pool: NodePool) -> QuerySet[Workload, Any]:
    """Ids of workloads with pods in `pool`, or that may run there (a subquery)."""
    placed = Allocation.objects.filter(node__pool=pool).values("workload_id")
    wanted = WorkloadCandidatePool.objects.filter(pool=pool).values("workload_id")
    return Workload.objects.filter(Q(pk__in=placed) | Q(pk__in=wanted)).values("pk")
