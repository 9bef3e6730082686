"""The database as the engine sees it: a frozen ClusterSnapshot read in constant queries.

Pools, nodes and queues are keyed by name (so pending reasons read naturally: "project
vision would exceed ..."), workloads by str(pk). Alongside the snapshot, `LiveSnapshot`
keeps what the apply step needs to map decisions back: primary keys, the versions the
decisions were computed from, and the current allocations.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.db.models import Q

from scheduler_core.adapters.hot_rows import Mark, read_hot
from scheduler_core.choices import (
    PLACED_STATES,
    FairshareMode,
    NodeState,
    WorkloadStatus,
)
from scheduler_core.engine.resources import UNLIMITED, Resources
from scheduler_core.engine.snapshot import (
    NODE_CORDONED,
    STATUS_RUNNING,
    ClusterSnapshot,
    NodeSpec,
    PodGroupSpec,
    PodPlacement,
    PoolConfig,
    QueueSpec,
    UsageRecord,
    WorkloadSpec,
)
from scheduler_core.models import (
    Allocation,
    Department,
    Node,
    NodePool,
    Project,
    Quota,
    UsageSample,
    Workload,
    WorkloadCandidatePool,
)

# Read every cycle: what the scheduler itself changes without a new version.
# Read once per workload version (see SnapshotMemo).
STATIC_FIELDS = (
    "pk", "version", "project_id", "name", "kind", "priority", "preemptible", "pods",
    "min_pods", "gpus", "cpu", "memory", "groups", "node_selector", "weight", "backoff_limit",
    "spec", "submitted_at",
)  # fmt: skip
NODE_FIELDS = (
    "pk", "name", "pool_id", "gpu_count", "cpu", "memory", "labels", "capabilities", "state",
    "version",
)  # fmt: skip
IN_LIST = 2000  # keys per IN (...) list

# A node whose agent has no container runtime (its hello's capabilities, or a label
# `containers: "false"`) cannot run images; every other node can. The engine matches
# labels by equality, so the snapshot states the label on every node and asks it of every
# workload with an image: its pending reason then names the selector it lacks.
CONTAINERS_LABEL = "containers"


def _node_labels(
    labels: dict[str, str] | None, capabilities: dict[str, Any] | None
) -> dict[str, str]:
    """A node's labels, with whether it runs containers stated (from its labels, or what
    its agent said in hello: `capabilities.containers`)."""
    labels = labels or {}
    if labels.get(CONTAINERS_LABEL) == "false" or (capabilities or {}).get("containers") is False:
        return {**labels, CONTAINERS_LABEL: "false"}
    return {**labels, CONTAINERS_LABEL: "true"}


def _node_selector(selector: dict[str, str] | None, spec: dict[str, Any] | None) -> dict[str, str]:
    """A workload's selector, with a container runtime asked of its nodes when it has an
    image."""
    selector = selector or {}
    if (spec or {}).get("image"):
        return {**selector, CONTAINERS_LABEL: "true"}
    return selector


def _engine_node_state(state: str) -> str:
    """An unreachable node keeps its pods but takes no new ones: cordoned, for the engine."""
    return NODE_CORDONED if state == NodeState.UNREACHABLE else state


@dataclass(frozen=True, slots=True)
class AllocationRow:
    """One running pod as stored."""

    pk: int
    group: str
    pod_index: int
    node_id: int
    gpu_devices: tuple[int, ...]
    gpu_fraction: float


@dataclass(slots=True)
class WorkloadRow:
    """What the apply step needs of a workload (read once with the snapshot)."""

    pk: int
    project_id: int
    name: str
    priority: int
    status: str
    pending_reason: str
    pending_reason_kind: str
    queue_position: int | None
    started_at: datetime | None
    progress_seconds: float
    restarts: int
    backoff_limit: int | None
    spec: dict[str, Any]
    version: int
    allocations: list[AllocationRow] = field(default_factory=list)


@dataclass
class LiveSnapshot:
    """A ClusterSnapshot plus the keys and versions needed to apply its decisions."""

    snapshot: ClusterSnapshot
    taken_at: datetime
    pool_ids: dict[str, int]
    node_ids: dict[str, int]
    node_names: dict[int, str]
    node_pools: dict[int, int]
    node_versions: dict[int, int]
    queue_owners: dict[str, tuple[str, int]]
    workloads: dict[int, WorkloadRow]
    project_departments: dict[int, int]
    pool_backends: dict[int, str] = field(default_factory=dict)  # pool id -> choices.Backend
    unseen: int = 0  # waiting workloads left for the next snapshot (load_snapshot's new_limit)

    def node_id(self, name: str) -> int:
        return self.node_ids[name]

    def queue_key(self, kind: str, pk: int) -> str | None:
        return self._queue_keys.get((kind, pk))

    def __post_init__(self) -> None:
        self._queue_keys = {owner: key for key, owner in self.queue_owners.items()}


def epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _resources(gpus: float, cpu: float, memory: float, *, zero_is_unlimited: bool) -> Resources:
    """Quota amounts: a CPU or memory quota of 0 means "not governed"."""
    if zero_is_unlimited:
        return Resources(float(gpus), float(cpu) or UNLIMITED, float(memory) or UNLIMITED)
    return Resources(float(gpus), float(cpu), float(memory))


def _limit(row: Mapping[str, Any]) -> Resources:
    def amount(value: float | None) -> float:
        return UNLIMITED if value is None else float(value)

    return Resources(
        amount(row["limit_gpus"]), amount(row["limit_cpu"]), amount(row["limit_memory"])
    )


def _pool_config(pool: NodePool) -> PoolConfig:
    return PoolConfig(
        name=pool.name,
        policy=pool.policy,
        placement=pool.placement,
        preemption=pool.preemption,
        consolidation=pool.consolidation,
        max_consolidation_evaluations=pool.max_consolidation_evaluations,
        consolidation_weighs_lost_work=pool.consolidation_weighs_lost_work,
        consolidation_within_quota=pool.consolidation_within_quota,
        reclaim_weighs_lost_work=pool.reclaim_weighs_lost_work,
        reserve_for_gangs=pool.reserve_for_gangs,
        max_reclaims_per_cycle=pool.max_reclaims_per_cycle,
        max_preemptions_per_cycle=pool.max_preemptions_per_cycle,
        max_preemptions_per_workload=pool.max_preemptions_per_workload,
        preemption_loop_evictions=pool.preemption_loop_evictions,
        reclaim_lost_work_ratio=pool.reclaim_lost_work_ratio,
        min_guaranteed_runtime=float(pool.min_guaranteed_runtime),
        over_quota_weight_from_quota=pool.over_quota_weight_from_quota,
        fairshare_mode=pool.fairshare_mode,
        time_based_window=float(pool.time_based_window),
        time_based_half_life=float(pool.time_based_half_life),
        time_based_k=float(pool.time_based_k),
    )


def _groups(row: dict[str, Any]) -> tuple[PodGroupSpec, ...]:
    if not row["groups"]:
        return _group_specs(
            (("main", row["pods"], row["min_pods"], row["gpus"], row["cpu"], row["memory"]),)
        )
    return _group_specs(
        tuple(
            (g["name"], g["pods"], g.get("min_pods", g["pods"]), g.get("gpus", 0),
             g.get("cpu", 0), g.get("memory", 0))
            for g in row["groups"]
        )
    )  # fmt: skip


@lru_cache(maxsize=4096)
def _group_specs(shapes: tuple[tuple[Any, ...], ...]) -> tuple[PodGroupSpec, ...]:
    """Pod groups by shape: thousands of workloads share a few shapes, and the specs are
    frozen, so one object per shape serves them all."""
    return tuple(
        PodGroupSpec(
            name=str(name),
            pods=int(pods),
            min_pods=int(min_pods),
            request=Resources(float(gpus), float(cpu), float(memory)),
        )
        for name, pods, min_pods, gpus, cpu, memory in shapes
    )


@dataclass(frozen=True, slots=True)
class StaticPart:
    """What a workload cannot change without a new version: read once per version."""

    version: int
    project_id: int
    name: str
    kind: str
    priority: int
    preemptible: bool
    groups: tuple[PodGroupSpec, ...]
    node_selector: dict[str, str]
    weight: float
    backoff_limit: int | None
    spec: dict[str, Any]
    submitted_at: float
    pool_ids: tuple[int, ...]


class SnapshotMemo:
    """The static part of every active workload, kept between cycles in this process, the
    engine's spec of each waiting one, and every node as of its version.

    The scheduling loop keeps one between its cycles (scheduler_core.loop.state). A cycle
    on a long queue would otherwise spend most of its time decoding the same thousands of
    rows (JSON fields, timestamps) into the same objects. Every change a
    user or the runtime makes to a workload raises its version (the apply step's version
    check relies on that too), so a memo entry is good while the version matches; what
    the scheduler changes itself (status, reasons, positions, start, restarts) is read
    every cycle. Entries of workloads that are no longer active are dropped each cycle.
    Nodes are versioned the same way (a heartbeat does not raise it), so a cycle reads
    only their versions and decodes only the nodes that changed: thousands of nodes
    otherwise cost a large cluster's cycle tens of milliseconds of JSON decoding.
    """

    def __init__(self) -> None:
        self.static: dict[int, StaticPart] = {}
        # node pk -> its NODE_FIELDS row (labels as the engine sees them: _node_labels)
        self.nodes: dict[int, dict[str, Any]] = {}
        # the last waiting workload read when new ones are bounded (see hot_rows)
        self.mark: Mark | None = None
        self.specs: dict[int, tuple[tuple[Any, ...], WorkloadSpec]] = {}
        # pending workload -> (its HOT_FIELDS row, WorkloadRow, engine spec), good while
        # the row and the names of projects and pools (`names`) stay the same
        self.waiting: dict[int, tuple[tuple[Any, ...], WorkloadRow, WorkloadSpec]] = {}
        self.names: object = None

    def waiting_rows(
        self, names: object
    ) -> dict[int, tuple[tuple[Any, ...], WorkloadRow, WorkloadSpec]]:
        """The pending rows kept by the last snapshot (see keep_waiting), if it was built
        with the same project and pool `names` (else none)."""
        return self.waiting if names == self.names else {}

    def keep_waiting(
        self, names: object, rows: dict[int, tuple[tuple[Any, ...], WorkloadRow, WorkloadSpec]]
    ) -> None:
        """Keep this snapshot's pending rows for the next one."""
        self.names = names
        self.waiting = rows

    def refresh(self, hot: list[tuple[Any, ...]]) -> dict[int, StaticPart]:
        """The static part of each workload of `hot` (rows of HOT_FIELDS), reading only
        those not known at their version (two queries per 2,000 of them, or none)."""
        known = self.static
        get = known.get
        missing = [row[0] for row in hot if (part := get(row[0])) is None or part.version != row[1]]
        if not missing and len(known) == len(hot):
            return known  # the same workloads at the same versions (the usual cycle)
        fresh = _read_static(missing) if missing else {}
        current = {}
        for pk, version, *_ in hot:
            part = fresh.get(pk) or known.get(pk)
            if part is not None and part.version == version:
                current[pk] = part
        self.static = current
        self.specs = {pk: entry for pk, entry in self.specs.items() if pk in current}
        return current

    def refresh_nodes(self) -> list[dict[str, Any]]:
        """Every node's row (NODE_FIELDS, `labels` as the engine sees them: see
        _node_labels), in primary key order, reading in full only the nodes not known at
        their version."""
        versions = list(Node.objects.order_by("pk").values_list("pk", "version"))
        known = self.nodes
        missing = [pk for pk, version in versions if known.get(pk, {}).get("version") != version]
        fresh = _read_nodes(missing) if missing else {}
        current = {}
        for pk, _ in versions:
            row = fresh.get(pk) or known.get(pk)
            if row is not None:  # else deleted between the two reads
                current[pk] = row
        self.nodes = current
        return list(current.values())

    def waiting_spec(
        self, pk: int, version: int, part: StaticPart, project: str, pools: tuple[str, ...],
        status: str, restarts: int, pending_since: float | None, room_wait_since: float | None,
        preemptions: int, quick_evictions: int,
    ) -> WorkloadSpec:  # fmt: skip
        """The spec of a workload without pods, built again only when what it is built
        from changed (its version, status or restarts, or a project or pool name)."""
        key = (
            version, status, restarts, project, pools, pending_since, room_wait_since, preemptions,
            quick_evictions,
        )  # fmt: skip
        entry = self.specs.get(pk)
        if entry is not None and entry[0] == key:
            return entry[1]
        spec = _workload_spec(
            pk, part, project, pools, status, restarts, (), None, None, pending_since,
            room_wait_since, preemptions, quick_evictions,
        )  # fmt: skip
        self.specs[pk] = (key, spec)
        return spec


def _read_nodes(pks: list[int]) -> dict[int, dict[str, Any]]:
    """Rows (NODE_FIELDS) of nodes `pks`, their labels as the engine sees them."""
    rows = {}
    for chunk in key_chunks(pks):
        for row in Node.objects.filter(pk__any_of=chunk).values(*NODE_FIELDS):
            row["labels"] = _node_labels(row["labels"], row.pop("capabilities"))
            rows[row["pk"]] = row
    return rows


def _read_static(pks: list[int]) -> dict[int, StaticPart]:
    """Static parts of workloads `pks`, with their candidate pools (two queries per
    IN_LIST workloads).

    Rows are looked up by key only, never joined: the workload table grows by thousands
    of rows between two ANALYZEs under load, and a join planned on stale statistics (a
    nested loop over a sequential scan) once took a cycle ten seconds.
    """
    pools: dict[int, list[int]] = defaultdict(list)
    rows = []
    for chunk in key_chunks(pks):
        for workload_id, pool_id in (
            WorkloadCandidatePool.objects.filter(workload_id__any_of=chunk)
            .order_by("workload_id", "preference", "pk")
            .values_list("workload_id", "pool_id")
        ):
            pools[workload_id].append(pool_id)
        rows += Workload.objects.filter(pk__any_of=chunk).values(*STATIC_FIELDS)
    return {
        r["pk"]: StaticPart(
            version=r["version"],
            project_id=r["project_id"],
            name=r["name"],
            kind=r["kind"],
            priority=r["priority"],
            preemptible=r["preemptible"],
            groups=_groups(r),
            node_selector=_node_selector(r["node_selector"], r["spec"]),
            weight=r["weight"],
            backoff_limit=r["backoff_limit"],
            spec=r["spec"] or {},
            submitted_at=r["submitted_at"].timestamp(),
            pool_ids=tuple(pools.get(r["pk"], ())),
        )
        for r in rows
    }


def key_chunks(pks: list[int]) -> Iterator[list[int]]:
    """`pks` in IN (...) lists of at most IN_LIST keys."""
    for start in range(0, len(pks), IN_LIST):
        yield pks[start : start + IN_LIST]


def _queue_keys(
    departments: Sequence[Mapping[str, Any]], projects: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, int], str]:
    """Names as keys; a department sharing a project's name gets a suffix."""
    keys = {("project", p["pk"]): p["name"] for p in projects}
    taken = set(keys.values())
    for d in departments:
        name = d["name"]
        keys[("department", d["pk"])] = f"{name} (department)" if name in taken else name
    return keys


def load_snapshot(
    now: datetime, memo: SnapshotMemo | None = None, *, new_limit: int | None = None
) -> LiveSnapshot:
    """Read the cluster as of `now` in a constant number of queries: eight (one more per
    2,000 running workloads), plus two per 2,000 workloads and one per 2,000 nodes new to
    `memo` or changed since (the memo that the caller keeps between cycles; without one,
    every workload and node is new).

    With `new_limit`, at most that many waiting workloads new to `memo` are read, the
    longest waiting first; the others are left for the next snapshot (`LiveSnapshot.unseen`
    counts them), as if they had arrived a moment later, and are not even transferred
    (one query more, two when some are left: see hot_rows). So a flood of submissions is
    taken in over a few short cycles rather than by one long one."""
    memo = SnapshotMemo() if memo is None else memo
    pools = list(NodePool.objects.order_by("pk"))
    pool_names = {p.pk: p.name for p in pools}
    nodes = memo.refresh_nodes()
    departments = list(
        Department.objects.order_by("pk").values("pk", "name", "rank", "over_quota_weight")
    )
    projects = list(
        Project.objects.order_by("pk").values(
            "pk", "name", "department_id", "rank", "over_quota_weight"
        )
    )
    quotas = list(
        Quota.objects.values(
            "pool_id", "department_id", "project_id", "gpus", "cpu", "memory",
            "limit_gpus", "limit_cpu", "limit_memory",
        )
    )  # fmt: skip
    hot, unseen, memo.mark = read_hot(now, memo.static, memo.mark, new_limit)
    static = memo.refresh(hot)
    allocations = _read_allocations(hot)
    queue_keys = _queue_keys(departments, projects)
    node_names = {n["pk"]: n["name"] for n in nodes}
    node_pools = {n["pk"]: n["pool_id"] for n in nodes}
    reader = _WorkloadReader(memo, static, allocations, queue_keys, pool_names, node_names)
    workload_specs, workload_rows = reader.read(hot, node_pools)
    snapshot = ClusterSnapshot(
        now=now.timestamp(),
        pools=tuple(_pool_config(p) for p in pools),
        nodes=tuple(_node_spec(n, pool_names) for n in nodes),
        queues=tuple(_queue_specs(departments, projects, quotas, pool_names, queue_keys)),
        workloads=tuple(workload_specs),
        usage=_usage(now, pools, pool_names, queue_keys),
    )
    return LiveSnapshot(
        snapshot=snapshot,
        taken_at=now,
        pool_ids={p.name: p.pk for p in pools},
        node_ids={n["name"]: n["pk"] for n in nodes},
        node_names=node_names,
        node_pools=node_pools,
        node_versions={n["pk"]: n["version"] for n in nodes},
        queue_owners={key: owner for owner, key in queue_keys.items()},
        workloads=workload_rows,
        project_departments={p["pk"]: p["department_id"] for p in projects},
        pool_backends={p.pk: p.backend for p in pools},
        unseen=unseen,
    )


def _read_allocations(hot: list[tuple[Any, ...]]) -> dict[int, list[AllocationRow]]:
    """The pods of the placed workloads among `hot`, by workload key."""
    allocations: dict[int, list[AllocationRow]] = defaultdict(list)
    placed = [pk for pk, _, status, *_ in hot if status != WorkloadStatus.PENDING]
    for chunk in key_chunks(placed):  # by key, not joined (see _read_static)
        for pk, workload_id, group, pod_index, node_id, devices, fraction in (
            Allocation.objects.filter(workload_id__any_of=chunk)
            .order_by("workload_id", "group", "pod_index")
            .values_list("pk", "workload_id", "group", "pod_index", "node_id", "gpu_devices",
                         "gpu_fraction")
        ):  # fmt: skip
            allocations[workload_id].append(
                AllocationRow(pk, group, pod_index, node_id, tuple(devices or ()), fraction)
            )
    return allocations


def _queue_specs(
    departments: Sequence[Mapping[str, Any]],
    projects: Sequence[Mapping[str, Any]],
    quotas: Sequence[Mapping[str, Any]],
    pool_names: dict[int, str],
    queue_keys: dict[tuple[str, int], str],
) -> list[QueueSpec]:
    """The departments, then the projects, as the engine's queues with their quotas and
    limits per pool."""
    quota_of: dict[tuple[str, int], dict[str, Resources]] = defaultdict(dict)
    limit_of: dict[tuple[str, int], dict[str, Resources]] = defaultdict(dict)
    for q in quotas:
        owner = (
            ("project", q["project_id"]) if q["project_id"] else ("department", q["department_id"])
        )
        quota_pool = pool_names[q["pool_id"]]
        quota_of[owner][quota_pool] = _resources(
            q["gpus"], q["cpu"], q["memory"], zero_is_unlimited=True
        )
        limit_of[owner][quota_pool] = _limit(q)
    return [
        QueueSpec(
            name=queue_keys[("department", d["pk"])],
            rank=d["rank"],
            over_quota_weight=d["over_quota_weight"],
            quota=quota_of.get(("department", d["pk"]), {}),
            limit=limit_of.get(("department", d["pk"]), {}),
            creation_order=d["pk"],
        )
        for d in departments
    ] + [
        QueueSpec(
            name=queue_keys[("project", p["pk"])],
            parent=queue_keys[("department", p["department_id"])],
            rank=p["rank"],
            over_quota_weight=p["over_quota_weight"],
            quota=quota_of.get(("project", p["pk"]), {}),
            limit=limit_of.get(("project", p["pk"]), {}),
            creation_order=p["pk"],
        )
        for p in projects
    ]


def _node_spec(n: dict[str, Any], pool_names: dict[int, str]) -> NodeSpec:
    """A node row as the engine's node."""
    return NodeSpec(
        name=n["name"],
        pool=pool_names[n["pool_id"]],
        gpus=n["gpu_count"],
        cpu=float(n["cpu"]) or None,
        memory=float(n["memory"]) or None,
        labels=n["labels"],
        state=_engine_node_state(n["state"]),
    )


class _WorkloadReader:
    """The active workloads of a snapshot as engine specs and WorkloadRows. A waiting
    workload whose row did not change since the last cycle is the same WorkloadRow and
    engine spec as then (the apply step never changes a pending row)."""

    def __init__(
        self,
        memo: SnapshotMemo,
        static: dict[int, Any],
        allocations: dict[int, list[AllocationRow]],
        queue_keys: dict[tuple[str, int], str],
        pool_names: dict[int, str],
        node_names: dict[int, str],
    ) -> None:
        self.memo = memo
        self.static = static
        self.allocations = allocations
        self.queue_keys = queue_keys
        self.pool_names = pool_names
        self.node_names = node_names
        self.specs: list[WorkloadSpec] = []
        self.rows: dict[int, WorkloadRow] = {}

    def read(
        self, hot: list[tuple[Any, ...]], node_pools: dict[int, int]
    ) -> tuple[list[WorkloadSpec], dict[int, WorkloadRow]]:
        """Specs (in `hot`'s order) and rows by key; the waiting ones kept in the memo."""
        names = (tuple(self.queue_keys.items()), tuple(self.pool_names.items()))
        known = self.memo.waiting_rows(names)
        waiting = {}
        for item in hot:
            pk, status = item[0], item[2]
            if status == WorkloadStatus.PENDING:
                entry = known.get(pk)
                if entry is not None and entry[0] == item:
                    waiting[pk] = entry
                    self.rows[pk] = entry[1]
                    self.specs.append(entry[2])
                    continue
            row = self._read_one(item, node_pools)
            if row is not None and status == WorkloadStatus.PENDING:
                waiting[pk] = (item, row, self.specs[-1])
        self.memo.keep_waiting(names, waiting)
        return self.specs, self.rows

    def _read_one(self, item: tuple[Any, ...], node_pools: dict[int, int]) -> WorkloadRow | None:
        pk, version, status, restarts, reason, reason_kind, position, started, progress = item[:9]
        pending_since = epoch(item[9])
        room_wait_since = epoch(item[10])
        preemptions, quick_evictions = item[11], item[12]
        part = self.static.get(pk)
        if part is None:
            return None  # became inactive between the two reads (not at REPEATABLE READ)
        project = self.queue_keys[("project", part.project_id)]
        candidates = tuple(self.pool_names[p] for p in part.pool_ids)
        pods = self.allocations.get(pk, [])
        if status in PLACED_STATES:  # starting or running: it holds its GPUs either way
            placements = tuple(
                PodPlacement(a.group, self.node_names[a.node_id], a.gpu_devices, a.gpu_fraction)
                for a in pods
            )
            pool = self.pool_names[node_pools[pods[0].node_id]] if pods else None
            self.specs.append(
                _workload_spec(
                    pk, part, project, candidates, STATUS_RUNNING, restarts, placements, pool,
                    epoch(started), preemptions=preemptions, quick_evictions=quick_evictions,
                )
            )  # fmt: skip
        else:
            spec = self.memo.waiting_spec(
                pk, version, part, project, candidates, status, restarts, pending_since,
                room_wait_since, preemptions, quick_evictions,
            )  # fmt: skip
            self.specs.append(spec)
        row = self.rows[pk] = WorkloadRow(
            pk=pk,
            project_id=part.project_id,
            name=part.name,
            priority=part.priority,
            status=status,
            pending_reason=reason,
            pending_reason_kind=reason_kind,
            queue_position=position,
            started_at=started,
            progress_seconds=progress,
            restarts=restarts,
            backoff_limit=part.backoff_limit,
            spec=part.spec,
            version=version,
            allocations=pods,
        )
        return row


def _workload_spec(
    pk: int,
    part: StaticPart,
    project: str,
    pools: tuple[str, ...],
    status: str,
    restarts: int,
    pods: tuple[PodPlacement, ...],
    pool: str | None,
    started_at: float | None,
    pending_since: float | None = None,
    room_wait_since: float | None = None,
    preemptions: int = 0,
    quick_evictions: int = 0,
) -> WorkloadSpec:
    return WorkloadSpec(
        id=str(pk),
        name=part.name,
        project=project,
        groups=part.groups,
        kind=part.kind,
        priority=part.priority,
        preemptible=part.preemptible,
        pools=pools,
        node_selector=part.node_selector,
        weight=part.weight,
        submitted_at=part.submitted_at,
        creation_order=pk,
        backoff_limit=part.backoff_limit,
        restarts=restarts,
        status=status,
        pods=pods,
        pool=pool,
        started_at=started_at,
        pending_since=pending_since,
        room_wait_since=room_wait_since,
        preemptions=preemptions,
        quick_evictions=quick_evictions,
    )


def _usage(
    now: datetime,
    pools: list[NodePool],
    pool_names: dict[int, str],
    queue_keys: dict[tuple[str, int], str],
) -> tuple[UsageRecord, ...]:
    """Project usage samples within each time-based pool's window (one query, or none)."""
    timed = [p for p in pools if p.fairshare_mode == FairshareMode.TIME_BASED]
    if not timed:
        return ()
    window = Q()
    for p in timed:
        window |= Q(pool_id=p.pk, interval_end__gt=now - timedelta(seconds=p.time_based_window))
    records = []
    for pool_id, project_id, start, end, gpu_seconds in (
        UsageSample.objects.filter(window, project__isnull=False)
        .order_by("interval_start", "pk")
        .values_list("pool_id", "project_id", "interval_start", "interval_end", "gpu_seconds")
    ):
        key = queue_keys.get(("project", project_id))
        if key is not None and math.isfinite(gpu_seconds):
            records.append(
                UsageRecord(
                    key, pool_names[pool_id], start.timestamp(), end.timestamp(), gpu_seconds
                )
            )
    return tuple(records)
