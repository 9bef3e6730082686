"""The nodes list: each node with its GPUs (and who holds each), CPU and memory held by its
pods, filtered by pool and state, as a user may see them."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Sum

from scheduler_core.models import Allocation, NodePool
from scheduler_core.selectors.gpu_map import NodeMap, gpu_map


@dataclass
class NodeRow:
    """A node of the list: its GPU map plus the CPU cores and memory (GiB) its pods hold."""

    map: NodeMap
    pool: NodePool
    cpu_used: float
    memory_used: float

    @property
    def node(self):
        return self.map.node

    @property
    def gpu_share(self) -> float:
        """Allocated GPUs over the node's GPUs, 0..1."""
        total = self.map.node.gpu_count
        return self.map.gpus_used / total if total else 0.0


def node_rows(*, user, pool: NodePool | None = None, state: str = "") -> list[NodeRow]:
    """Nodes `user` may see, by pool then name, optionally of one pool and one state (5
    queries whatever the number of nodes)."""
    pairs = [(n, p.pool) for p in gpu_map(user=user, pool=pool) for n in p.nodes]
    if state:
        pairs = [(n, p) for n, p in pairs if n.node.state == state]
    maps = [n for n, _ in pairs]
    usage: dict[int, tuple[float, float]] = {
        node_id: (cpu or 0.0, memory or 0.0)
        for node_id, cpu, memory in Allocation.objects.filter(node_id__in=[n.node.pk for n in maps])
        .values("node_id")
        .annotate(cpu=Sum(F("workload__cpu")), memory=Sum(F("workload__memory")))
        .values_list("node_id", "cpu", "memory")
    }
    return [
        NodeRow(
            map=n,
            pool=p,
            cpu_used=usage.get(n.node.pk, (0.0, 0.0))[0],
            memory_used=usage.get(n.node.pk, (0.0, 0.0))[1],
        )
        for n, p in pairs
    ]
