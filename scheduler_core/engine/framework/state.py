"""Mutable per-session state built from a snapshot: nodes with device usage, pools
with a free-capacity index, workloads with their current pods.

The free-capacity index buckets ready nodes by their number of wholly free GPU devices,
so finding a node for a pod costs a scan of at most (devices per node + 1) buckets
instead of every node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.resources import EPSILON, Resources
from scheduler_core.engine.snapshot import (
    NODE_DOWN,
    NODE_READY,
    NodeSpec,
    PodGroupSpec,
    PodPlacement,
    PoolConfig,
    WorkloadSpec,
)

if TYPE_CHECKING:
    from scheduler_core.engine.framework.queue_context import QueueContext


class NodeState:
    """A node during a session: capacity, what is used, per-device GPU usage."""

    __slots__ = (
        "cap_cpu",
        "cap_mem",
        "dev_used",
        "free_whole",
        "gpus",
        "index",
        "labels",
        "name",
        "partial_count",
        "pool",
        "ready",
        "spec",
        "state",
        "used_cpu",
        "used_mem",
        "workloads",
    )

    def __init__(self, spec: NodeSpec, index: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.index = index
        self.pool = spec.pool
        self.gpus = spec.gpus
        cap = spec.capacity()
        self.cap_cpu = cap.cpu
        self.cap_mem = cap.memory
        self.used_cpu = 0.0
        self.used_mem = 0.0
        self.dev_used: list[float] = [0.0] * spec.gpus
        self.free_whole = spec.gpus
        self.partial_count = 0  # devices shared by fractions with room left
        self.labels = dict(spec.labels)
        self.state = spec.state
        self.ready = spec.state == NODE_READY
        # ready nodes are counted per pool in PoolIndex.ready_nodes
        # workload id -> number of its pods here (insertion ordered, deterministic)
        self.workloads: dict[str, int] = {}

    def free_gpus(self) -> float:
        """Free GPU capacity over all devices (fractions included)."""
        return sum(1.0 - u for u in self.dev_used)

    def has_partial_device(self) -> bool:
        """True when some device is shared by fractional pods and has room left."""
        return self.partial_count > 0

    def fits_cpu_mem(self, cpu: float, mem: float) -> bool:
        """True when `cpu` cores and `mem` GiB are free here."""
        return (
            self.used_cpu + cpu <= self.cap_cpu + EPSILON
            and self.used_mem + mem <= self.cap_mem + EPSILON
        )

    def matches(self, selector: dict[str, str]) -> bool:
        """True when the node carries every label of `selector`."""
        labels = self.labels
        return all(labels.get(k) == v for k, v in selector.items())


class PoolIndex:
    """The nodes of a pool and an index of their free capacity (ready nodes only)."""

    __slots__ = (
        "buckets",
        "capacity",
        "config",
        "free_gpus",
        "max_devices",
        "name",
        "nodes",
        "partial",
        "ready_nodes",
        "reasons",
        "reasons_version",
        "reserved",
        "selector_cache",
        "version",
    )

    def __init__(self, config: PoolConfig, nodes: list[NodeState]) -> None:
        self.config = config
        self.name = config.name
        self.nodes = nodes
        self.max_devices = max((n.gpus for n in nodes), default=0)
        self.buckets: list[dict[str, NodeState]] = [{} for _ in range(self.max_devices + 1)]
        self.partial: dict[str, NodeState] = {}
        self.free_gpus = 0.0
        self.ready_nodes = sum(1 for n in nodes if n.ready)
        self.selector_cache: dict[tuple[tuple[str, str], ...], bool] = {}
        # bumped by every bind and unbind in the pool: reasons worded from the pool's
        # state are kept (see cached_reason) while it stays the same
        self.version = 0
        self.reasons: dict[tuple[object, ...], str] = {}
        self.reasons_version = 0
        # node name -> the pending gang it is held for this cycle (reserve_for_gangs)
        self.reserved: dict[str, WorkloadState] = {}
        g = c = m = 0.0
        for n in nodes:
            if n.state != NODE_DOWN:
                g += n.gpus
                c += n.cap_cpu
                m += n.cap_mem
            if n.ready:
                self.buckets[n.free_whole][n.name] = n
                self.free_gpus += n.gpus
        self.capacity = Resources(g, c, m)

    def has_matching_node(self, selector: dict[str, str]) -> bool:
        """Is any ready node labelled with every label of `selector`?"""
        key = tuple(sorted(selector.items()))
        found = self.selector_cache.get(key)
        if found is None:
            found = any(n.ready and n.matches(selector) for n in self.nodes)
            self.selector_cache[key] = found
        return found

    def cached_reason(self, key: tuple[object, ...]) -> str | None:
        """A reason worded earlier from the pool's current state under `key`, if any."""
        if self.reasons_version != self.version:
            self.reasons.clear()
            self.reasons_version = self.version
            return None
        return self.reasons.get(key)

    def keep_reason(self, key: tuple[object, ...], text: str) -> str:
        """Remember `text` for `key` while the pool's state stays the same."""
        if self.reasons_version == self.version:
            self.reasons[key] = text
        return text

    def blocked_for(self, w: WorkloadState) -> set[str] | None:
        """The nodes `w` may not take this cycle: those held for another pending gang
        (see actions/reserve.py) that has not started; None when there are none."""
        if not self.reserved:
            return None
        blocked = {
            name for name, owner in self.reserved.items() if owner is not w and not owner.pods
        }
        return blocked or None

    def hold_key(self, w: WorkloadState) -> str | None:
        """What `w`'s view of the held nodes depends on: its id when nodes are held for
        it (it alone may take them), None when it is kept off them as others are."""
        return w.id if any(owner is w for owner in self.reserved.values()) else None

    def largest_free_whole(self) -> int:
        """The most wholly free devices on one ready node."""
        for k in range(self.max_devices, 0, -1):
            if self.buckets[k]:
                return k
        return 0

    def reindex(self, node: NodeState, old_free_whole: int, old_partial: bool) -> None:
        """Move `node` to the right bucket after its usage changed."""
        if not node.ready:
            return
        if old_free_whole != node.free_whole:
            del self.buckets[old_free_whole][node.name]
            self.buckets[node.free_whole][node.name] = node
        partial = node.has_partial_device()
        if partial != old_partial:
            if partial:
                self.partial[node.name] = node
            else:
                del self.partial[node.name]


class GroupState:
    """A pod group of a workload: its spec and the per-pod request as floats."""

    __slots__ = ("cpu", "gpus", "memory", "min_pods", "name", "pods", "request")

    def __init__(self, spec: PodGroupSpec) -> None:
        self.name = spec.name
        self.pods = spec.pods
        self.min_pods = spec.min_pods
        self.request = spec.request
        self.gpus = spec.request.gpus
        self.cpu = spec.request.cpu
        self.memory = spec.request.memory


_NO_SELECTOR: dict[str, str] = {}  # shared by workloads without a selector; never changed


class WorkloadState:
    """A workload during a session: where its pods are now and what happened to it."""

    __slots__ = (
        "contexts",
        "counts",
        "department",
        "elastic",
        "evict_by",
        "evict_kind",
        "evict_reason",
        "evicted",
        "fail_reason",
        "failed",
        "group_map",
        "groups",
        "id",
        "initial_pods",
        "kind_key",
        "max_gpus",
        "min_gpus",
        "moved",
        "pods",
        "pool",
        "preemptible",
        "priority",
        "project",
        "selector",
        "spec",
    )

    def __init__(
        self, spec: WorkloadSpec, department: str, kinds: dict[tuple[object, ...], int]
    ) -> None:
        self.spec = spec
        self.id = spec.id
        self.project = spec.project
        self.department = department
        self.priority = spec.priority
        self.preemptible = spec.preemptible
        groups = [GroupState(g) for g in spec.groups]
        self.groups = groups
        # per pool: what binding a pod touches (see Session.bind_pod)
        self.contexts: dict[str, QueueContext] = {}
        if len(groups) == 1:  # the common case, without the generic loops
            only = groups[0]
            self.group_map = {only.name: only}
            self.counts: dict[str, int] = {only.name: 0}
            self.elastic = only.min_pods < only.pods
            self.max_gpus = 0 + only.gpus * only.pods
            self.min_gpus = 0 + only.gpus * only.min_pods
        else:
            self.group_map = {g.name: g for g in groups}
            self.counts = {g.name: 0 for g in groups}
            self.elastic = any(g.min_pods < g.pods for g in groups)
            self.max_gpus = sum(g.gpus * g.pods for g in groups)
            self.min_gpus = sum(g.gpus * g.min_pods for g in groups)
        selector = spec.node_selector
        self.selector = dict(selector) if selector else _NO_SELECTOR
        pods = spec.pods
        self.pods: list[PodPlacement] = list(pods)
        self.pool: str | None = spec.pool if pods else None
        self.initial_pods = tuple(pods)
        self.evicted = False
        self.evict_kind = ""
        self.evict_reason = ""
        self.evict_by: WorkloadState | None = None  # the workload it made room for
        self.moved = False
        self.failed = False
        self.fail_reason = ""
        # Workloads of one kind are alike to admission and placement: while nothing
        # commits, what is true of one waiting workload is true of the others. `kinds`
        # numbers the kinds of a session (small keys hash fast).
        kind = (
            spec.project,
            spec.preemptible,
            spec.kind,
            spec.groups,
            tuple(sorted(selector.items())) if selector else (),
            spec.pools,
        )
        self.kind_key = kinds.setdefault(kind, len(kinds))

    def flags(self) -> tuple[object, ...]:
        """What a session step may change besides pods (eviction, move, failure, pool),
        saved so that a discarded statement can put it back."""
        return (
            self.evicted,
            self.evict_kind,
            self.evict_reason,
            self.evict_by,
            self.moved,
            self.failed,
            self.fail_reason,
            self.pool,
        )

    def set_flags(self, flags: tuple[object, ...]) -> None:
        """Put back what `flags()` saved."""
        (
            self.evicted,
            self.evict_kind,
            self.evict_reason,
            self.evict_by,
            self.moved,
            self.failed,
            self.fail_reason,
            self.pool,
        ) = flags  # type: ignore[assignment]

    @property
    def name(self) -> str:
        """Display name."""
        return self.spec.display_name

    def group(self, name: str) -> GroupState:
        """The pod group called `name`."""
        return self.group_map[name]

    def pod_counts(self) -> dict[str, int]:
        """Running pods per group (a copy)."""
        return dict(self.counts)

    def extra_pods(self) -> int:
        """Running pods above the gang minimum (what shrinking can free)."""
        counts = self.counts
        return sum(max(0, counts[g.name] - g.min_pods) for g in self.groups)

    def missing_pods(self) -> int:
        """Pods wanted but not running (what expanding can add)."""
        counts = self.counts
        return sum(max(0, g.pods - counts[g.name]) for g in self.groups)

    def allocated(self) -> tuple[float, float, float]:
        """(gpus, cpu, memory) held by its running pods."""
        return self.request_of(self.counts)

    def request_of(self, counts: dict[str, int]) -> tuple[float, float, float]:
        """(gpus, cpu, memory) of `counts` pods per group."""
        g = c = m = 0.0
        for grp in self.groups:
            k = counts.get(grp.name, 0)
            g += grp.gpus * k
            c += grp.cpu * k
            m += grp.memory * k
        return (g, c, m)

    def min_counts(self) -> dict[str, int]:
        """The gang minimum: min_pods per group."""
        return {g.name: g.min_pods for g in self.groups}


def priority_order(w: WorkloadState) -> tuple[float, ...]:
    """Job order by priority (smaller first): higher priority, earlier submission,
    then creation order (FIFO among equals). The one definition: Determined's priority
    policy and the queue positions of a result use it too."""
    spec = w.spec
    return (-w.priority, spec.submitted_at, spec.creation_order)
