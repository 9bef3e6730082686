"""Cluster totals per pool."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from scheduler_core.choices import PLACED_STATES, NodeState, WorkloadStatus
from scheduler_core.models import Allocation, Department, Node, NodePool, Project, Workload


@dataclass(frozen=True)
class PoolSummary:
    """GPU totals of one pool for dashboards."""

    id: int
    name: str
    policy: str
    nodes: int
    nodes_ready: int
    gpus_total: int
    gpus_allocated: float
    running: int
    pending: int

    @property
    def gpus_free(self) -> float:
        return max(self.gpus_total - self.gpus_allocated, 0)

    @property
    def utilisation(self) -> float:
        return self.gpus_allocated / self.gpus_total if self.gpus_total else 0.0


def pool_summaries() -> list[PoolSummary]:
    """Per pool: nodes, GPUs total/allocated/free, running and pending workloads (5 queries)."""
    pools = list(NodePool.objects.order_by("name"))
    # pool id -> (nodes, ready nodes, GPUs)
    node_stats: dict[int, tuple[int, int, int]] = {
        pool_id: (n, ready, gpus or 0)
        for pool_id, n, ready, gpus in Node.objects.values("pool_id")
        .annotate(
            n=Count("id"),
            ready=Count("id", filter=Q(state=NodeState.READY)),
            gpus=Sum("gpu_count"),
        )
        .values_list("pool_id", "n", "ready", "gpus")
    }
    allocated: dict[int, float] = {}
    for row in Allocation.objects.values("node__pool_id", "gpu_devices", "gpu_fraction"):
        devices = len(row["gpu_devices"] or [])
        allocated[row["node__pool_id"]] = allocated.get(row["node__pool_id"], 0.0) + (
            devices * row["gpu_fraction"] if devices else 0.0
        )
    running: dict[int, int] = {}
    for counted in (
        Allocation.objects.filter(workload__status__in=PLACED_STATES)
        .values("node__pool_id")
        .annotate(w=Count("workload_id", distinct=True))
    ):
        running[counted["node__pool_id"]] = counted["w"]
    # A pending workload counts in each of its candidate pools (in every pool if it names
    # none), as the queue view shows it.
    pools_of: dict[int, set[int | None]] = {}
    for pk, pool_id in Workload.objects.filter(status=WorkloadStatus.PENDING).values_list(
        "pk", "pool_choices__pool_id"
    ):
        pools_of.setdefault(pk, set()).add(pool_id)
    pending: dict[int, int] = {}
    for choices in pools_of.values():
        for pool in pools:
            if None in choices or pool.pk in choices:
                pending[pool.pk] = pending.get(pool.pk, 0) + 1
    summaries = []
    for pool in pools:
        nodes, nodes_ready, gpus_total = node_stats.get(pool.pk, (0, 0, 0))
        summaries.append(
            PoolSummary(
                id=pool.pk,
                name=pool.name,
                policy=pool.policy,
                nodes=nodes,
                nodes_ready=nodes_ready,
                gpus_total=gpus_total,
                gpus_allocated=round(allocated.get(pool.pk, 0.0), 2),
                running=running.get(pool.pk, 0),
                pending=pending.get(pool.pk, 0),
            )
        )
    return summaries


def cluster_overview() -> dict:
    """Totals for the whole cluster and per pool."""
    pools = pool_summaries()
    counts = dict(
        Workload.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    return {
        "pools": pools,
        "gpus_total": sum(p.gpus_total for p in pools),
        "gpus_allocated": round(sum(p.gpus_allocated for p in pools), 2),
        "nodes": sum(p.nodes for p in pools),
        "departments": Department.objects.count(),
        "projects": Project.objects.count(),
        "workloads": counts,
        "running": sum(counts.get(s, 0) for s in PLACED_STATES),  # starting ones hold GPUs too
        "pending": counts.get(WorkloadStatus.PENDING, 0),
    }
