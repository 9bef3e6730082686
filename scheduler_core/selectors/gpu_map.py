"""The GPU map: every device of every node, with the pods (and projects) on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core import access
from scheduler_core.choices import NodeState
from scheduler_core.models import Allocation, Node, NodePool
from scheduler_core.runtime.executor import Capability
from scheduler_core.runtime.registry import backends_with
from scheduler_core.selectors.agents import DeviceUsage, device_usage


@dataclass
class DeviceSlice:
    """A share of one GPU device held by one pod. Projects the user may not see stay nameless."""

    fraction: float
    project_id: int | None
    project_name: str
    workload_id: int | None
    workload_name: str


@dataclass
class DeviceCell:
    """One GPU device of a node."""

    index: int
    slices: list[DeviceSlice] = field(default_factory=list)
    usage: DeviceUsage | None = None
    """Its latest sample from a node agent (`with_usage`), if one came lately."""

    @property
    def used(self) -> float:
        return min(sum(s.fraction for s in self.slices), 1.0)

    @property
    def free(self) -> float:
        return max(1.0 - self.used, 0.0)


@dataclass
class NodeMap:
    """A node and its devices."""

    node: Node
    devices: list[DeviceCell]

    @property
    def gpus_used(self) -> float:
        return round(sum(d.used for d in self.devices), 2)

    @property
    def gpus_free(self) -> float:
        return round(sum(d.free for d in self.devices), 2)

    @property
    def schedulable(self) -> bool:
        return self.node.state == NodeState.READY

    @property
    def simulated(self) -> bool:
        """Its pool's runs are simulated: no processes, no device readings."""
        return self.node.pool.backend in backends_with(Capability.KNOWS_RUN_ENDS)

    @property
    def idle_devices(self) -> int:
        return sum(1 for d in self.devices if d.usage is not None and d.usage.idle)


@dataclass
class PoolMap:
    """A pool's nodes."""

    pool: NodePool
    nodes: list[NodeMap] = field(default_factory=list)

    @property
    def gpus_total(self) -> int:
        return sum(n.node.gpu_count for n in self.nodes)

    @property
    def gpus_used(self) -> float:
        return round(sum(n.gpus_used for n in self.nodes), 2)

    @property
    def gpus_free_ready(self) -> float:
        """Free GPUs on nodes that take new pods."""
        return round(sum(n.gpus_free for n in self.nodes if n.schedulable), 2)


def with_usage(pools: list[PoolMap]) -> list[PoolMap]:
    """Give each device of agent-run nodes its latest sample (2 queries)."""
    nodes = [n for p in pools for n in p.nodes if not n.simulated]
    usage = device_usage(n.node.pk for n in nodes)
    for n in nodes:
        for device in n.devices:
            device.usage = usage.get((n.node.pk, device.index))
    return pools


def gpu_map(*, user, pool: NodePool | None = None, only: Node | None = None) -> list[PoolMap]:
    """Pools -> nodes -> devices -> pods, as `user` may see them (4 queries); only the node
    `only` (in its pool) when given."""
    if not access.is_authenticated(user):
        return []
    if only is not None:
        pool = only.pool
    pools = [pool] if pool is not None else list(NodePool.objects.order_by("name"))
    nodes = Node.objects.visible_to(user).filter(pool__in=pools).order_by("name")
    if only is not None:
        nodes = nodes.filter(pk=only.pk)
    visible = access.visible_project_ids(user)
    allocations = (
        Allocation.objects.filter(node__in=nodes)
        .select_related("workload", "workload__project")
        .order_by("workload__project__name", "workload_id", "pod_index")
    )
    by_node: dict[int, list[Allocation]] = {}
    for alloc in allocations:
        by_node.setdefault(alloc.node_id, []).append(alloc)
    maps = {p.pk: PoolMap(pool=p) for p in pools}
    for node in nodes:
        devices = [DeviceCell(index=i) for i in range(node.gpu_count)]
        for alloc in by_node.get(node.pk, []):
            project = alloc.workload.project
            shown = visible is None or project.pk in visible
            for index in alloc.gpu_devices or []:
                if 0 <= index < len(devices):
                    devices[index].slices.append(
                        DeviceSlice(
                            fraction=alloc.gpu_fraction,
                            project_id=project.pk if shown else None,
                            project_name=project.name if shown else "another project",
                            workload_id=alloc.workload_id if shown else None,
                            workload_name=alloc.workload.name if shown else "",
                        )
                    )
        node.pool = maps[node.pool_id].pool  # one pool object per pool, no query per node
        maps[node.pool_id].nodes.append(NodeMap(node=node, devices=devices))
    return list(maps.values())
