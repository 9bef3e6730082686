"""Small builders for engine snapshots (factories over fixture files)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from scheduler_core.engine import (
    ClusterSnapshot,
    NodeSpec,
    PodGroupSpec,
    PodPlacement,
    PoolConfig,
    QueueSpec,
    Resources,
    UsageRecord,
    WorkloadSpec,
    run_until_stable,
)
from scheduler_core.engine.simulation import Simulation
from scheduler_core.engine.snapshot import STATUS_RUNNING


def node(name: str, gpus: int = 8, pool: str = "default", **kw: object) -> NodeSpec:
    return NodeSpec(name=name, pool=pool, gpus=gpus, **kw)  # type: ignore[arg-type]


def dept(name: str, gpus: float | None = None, pool: str = "default", **kw: object) -> QueueSpec:
    quota = {pool: Resources(gpus, float("inf"), float("inf"))} if gpus is not None else {}
    return QueueSpec(name=name, quota=quota, **kw)  # type: ignore[arg-type]


def project(
    name: str,
    department: str = "org",
    gpus: float = 0,
    pool: str = "default",
    limit: float | None = None,
    **kw: object,
) -> QueueSpec:
    quota = {pool: Resources(gpus, float("inf"), float("inf"))}
    limits = {pool: Resources(limit, float("inf"), float("inf"))} if limit is not None else {}
    return QueueSpec(name=name, parent=department, quota=quota, limit=limits, **kw)  # type: ignore[arg-type]


_order = [0]


def workload(
    name: str,
    project: str = "p",
    gpus: float = 1,
    pods: int = 1,
    min_pods: int | None = None,
    running_on: Sequence[str] = (),
    started_at: float = 0.0,
    pool: str = "default",
    cpu: float = 0.0,
    **kw: object,
) -> WorkloadSpec:
    _order[0] += 1
    group = PodGroupSpec(
        pods=pods, min_pods=pods if min_pods is None else min_pods, request=Resources(gpus, cpu)
    )
    extra: dict[str, object] = {}
    if running_on:
        extra = {
            "status": STATUS_RUNNING,
            "pods": tuple(PodPlacement("main", n) for n in running_on),
            "pool": pool,
            "started_at": started_at,
        }
    fields: dict[str, object] = {"creation_order": _order[0], "submitted_at": float(_order[0])}
    fields.update(kw)
    fields.update(extra)
    return WorkloadSpec(id=name, project=project, groups=(group,), **fields)  # type: ignore[arg-type]


def snapshot(
    nodes: Iterable[NodeSpec],
    queues: Iterable[QueueSpec],
    workloads: Iterable[WorkloadSpec],
    pools: Iterable[PoolConfig] | None = None,
    now: float = 100.0,
    usage: Iterable[UsageRecord] = (),
) -> ClusterSnapshot:
    qs = list(queues)
    qs = [
        QueueSpec(**{**{f: getattr(q, f) for f in q.__dataclass_fields__}, "creation_order": i})
        for i, q in enumerate(qs)
    ]
    return ClusterSnapshot(
        now=now,
        pools=tuple(pools) if pools is not None else (PoolConfig(name="default"),),
        nodes=tuple(nodes),
        queues=tuple(qs),
        workloads=tuple(workloads),
        usage=tuple(usage),
    )


def simulation(
    nodes: Iterable[NodeSpec],
    queues: Iterable[QueueSpec],
    running: Iterable[WorkloadSpec] = (),
    durations: Mapping[str, float | None] | None = None,
    now: float = 0.0,
) -> Simulation:
    """A simulated cluster of `nodes` and `queues` in one default pool, with the
    workloads `running` (run times in `durations`, by id), at `now`."""
    return Simulation(
        pools=(PoolConfig(name="default"),),
        nodes={n.name: n for n in nodes},
        queues={q.name: q for q in queues},
        active={w.id: w for w in running},
        durations=dict(durations or {}),
        now=now,
    )


def settle(snap: ClusterSnapshot) -> tuple[ClusterSnapshot, list[object]]:
    """Run to a fixed point; return the final snapshot and the results."""
    final, results = run_until_stable(snap)
    return final, list(results)


def running(snap: ClusterSnapshot) -> dict[str, list[str]]:
    """Workload id -> nodes of its pods, for running workloads."""
    return {w.id: [p.node for p in w.pods] for w in snap.workloads if w.pods}
