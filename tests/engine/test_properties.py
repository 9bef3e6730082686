"""Properties over random clusters and workloads (hypothesis, bounded)."""

from __future__ import annotations

import math
from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.engine import (
    EVICT_RECLAIM,
    ClusterSnapshot,
    CycleResult,
    Evict,
    Expand,
    NodeSpec,
    PodGroupSpec,
    PoolConfig,
    QueueSpec,
    Resources,
    WorkloadSpec,
    apply_result,
    run_cycle,
    run_until_stable,
)
from scheduler_core.engine.cycle import MAX_CYCLES
from scheduler_core.engine.decisions import Allocate, Shrink

INF = math.inf


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    pool_names = ["a", "b"][: draw(st.integers(1, 2))]
    pools = tuple(
        PoolConfig(
            name=p,
            placement=draw(st.sampled_from(["binpack", "spread"])),
            policy=draw(st.sampled_from(["quota", "quota", "quota", "fairshare", "priority"])),
            consolidation=draw(st.booleans()),
            min_guaranteed_runtime=draw(st.sampled_from([0.0, 0.0, 50.0])),
        )
        for p in pool_names
    )
    nodes = tuple(
        NodeSpec(
            name=f"n{i}",
            pool=draw(st.sampled_from(pool_names)),
            gpus=draw(st.integers(1, 8)),
            cpu=draw(st.sampled_from([None, 8.0, 32.0])),
            labels={"zone": draw(st.sampled_from(["x", "y"]))},
            state=draw(st.sampled_from(["ready", "ready", "ready", "cordoned"])),
        )
        for i in range(draw(st.integers(1, 5)))
    )
    queues: list[QueueSpec] = []
    depts = [f"d{i}" for i in range(draw(st.integers(1, 2)))]
    for i, d in enumerate(depts):
        quota = {
            p: Resources(draw(st.integers(0, 12)), INF, INF)
            for p in pool_names
            if draw(st.booleans())
        }
        queues.append(
            QueueSpec(name=d, rank=draw(st.integers(0, 1)), quota=quota, creation_order=i)
        )
    projects = [f"p{i}" for i in range(draw(st.integers(1, 4)))]
    for i, p in enumerate(projects):
        quota = {pl: Resources(draw(st.integers(0, 8)), INF, INF) for pl in pool_names}
        limit = {
            pl: Resources(draw(st.integers(1, 16)), INF, INF)
            for pl in pool_names
            if draw(st.booleans())
        }
        queues.append(
            QueueSpec(
                name=p,
                parent=draw(st.sampled_from(depts)),
                over_quota_weight=draw(st.sampled_from([1.0, 2.0])),
                quota=quota,
                limit=limit,
                creation_order=len(depts) + i,
            )
        )
    workloads = []
    for i in range(draw(st.integers(1, 10))):
        groups = []
        for g in range(draw(st.integers(1, 2))):
            pods = draw(st.integers(1, 4))
            groups.append(
                PodGroupSpec(
                    name=f"g{g}",
                    pods=pods,
                    min_pods=draw(st.integers(1, pods)),
                    request=Resources(
                        draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 4.0])),
                        draw(st.sampled_from([0.0, 1.0, 4.0])),
                    ),
                )
            )
        priority = draw(st.sampled_from([40, 50, 80, 100, 125]))
        workloads.append(
            WorkloadSpec(
                id=f"w{i}",
                project=draw(st.sampled_from(projects)),
                groups=tuple(groups),
                priority=priority,
                preemptible=draw(st.booleans()) if priority >= 100 else True,
                weight=draw(st.sampled_from([1.0, 2.0])),
                pools=tuple(
                    draw(st.permutations(pool_names))[: draw(st.integers(1, len(pool_names)))]
                ),
                node_selector={"zone": "x"} if draw(st.integers(0, 4)) == 0 else {},
                submitted_at=float(draw(st.integers(0, 5))),
                creation_order=i,
            )
        )
    return ClusterSnapshot(
        now=100.0, pools=pools, nodes=nodes, queues=tuple(queues), workloads=tuple(workloads)
    )


def _check_invariants(snap: ClusterSnapshot) -> None:
    nodes = {n.name: n for n in snap.nodes}
    queues = {q.name: q for q in snap.queues}
    device_use: dict[tuple[str, int], float] = defaultdict(float)
    cpu_use: dict[str, float] = defaultdict(float)
    alloc: dict[tuple[str, str], float] = defaultdict(float)
    np_alloc: dict[tuple[str, str], float] = defaultdict(float)
    for w in snap.workloads:
        if not w.pods:
            continue
        groups = {g.name: g for g in w.groups}
        counts: dict[str, int] = defaultdict(int)
        pools = set()
        for pod in w.pods:
            g = groups[pod.group]
            counts[pod.group] += 1
            node = nodes[pod.node]
            pools.add(node.pool)
            assert node.state != "down"
            assert all(node.labels.get(k) == v for k, v in w.node_selector.items())
            assert abs(len(pod.devices) * pod.gpu_fraction - g.request.gpus) < 1e-9
            for d in pod.devices:
                assert 0 <= d < node.gpus
                device_use[(pod.node, d)] += pod.gpu_fraction
            cpu_use[pod.node] += g.request.cpu
        assert len(pools) == 1
        pool = pools.pop()
        for g in w.groups:  # gangs never partly placed
            assert g.min_pods <= counts[g.name] <= g.pods
        gpus = sum(groups[p.group].request.gpus for p in w.pods)
        project = queues[w.project]
        for q in (project.name, project.parent):
            alloc[(q, pool)] += gpus  # type: ignore[index]
            if not w.preemptible:
                np_alloc[(q, pool)] += gpus  # type: ignore[index]
    for (node, _), used in device_use.items():
        assert used <= 1.0 + 1e-9, node
    for node, used in cpu_use.items():
        cap = nodes[node].cpu
        assert cap is None or used <= cap + 1e-9
    policy = {p.name: p.policy for p in snap.pools}
    for (q, pool), used in alloc.items():
        if policy[pool] != "quota":
            continue
        limit = queues[q].limit.get(pool)
        if limit is not None:
            assert used <= limit.gpus + 1e-9, (q, pool)
    for (q, pool), used in np_alloc.items():
        if policy[pool] != "quota":
            continue
        quota = queues[q].quota.get(pool)
        if quota is None and queues[q].parent is None:
            children = [c for c in queues.values() if c.parent == q]
            deserved = sum(c.quota[pool].gpus if pool in c.quota else 0.0 for c in children)
        else:
            deserved = quota.gpus if quota is not None else 0.0
        assert used <= deserved + 1e-9, (q, pool)


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(clusters())
def test_invariants_hold_and_scheduling_reaches_a_fixed_point(snap: ClusterSnapshot) -> None:
    final, results = run_until_stable(snap)
    assert not results[-1].changed, "no fixed point (ping-pong)"
    assert len(results) < MAX_CYCLES
    _check_invariants(final)
    for queue in results[-1].queues.values():
        for status in queue.values():
            assert status.allocated.gpus <= status.requested.gpus + 1e-9
    # a later arrival: every action runs again over a busy cluster
    extra = WorkloadSpec(
        id="late",
        project=snap.workloads[0].project,
        groups=(PodGroupSpec(pods=2, request=Resources(1.0)),),
        priority=90,
        submitted_at=9.0,
        creation_order=99,
    )
    busy = ClusterSnapshot(
        now=200.0,
        pools=final.pools,
        nodes=final.nodes,
        queues=final.queues,
        workloads=(*final.workloads, extra),
    )
    again, more = run_until_stable(busy)
    assert not more[-1].changed
    _check_invariants(again)


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(clusters())
def test_same_input_same_output(snap: ClusterSnapshot) -> None:
    assert run_cycle(snap) == run_cycle(snap)


def _check_in_quota_work_kept(snap: ClusterSnapshot, result: CycleResult) -> None:
    """No reclaim took a workload wholly within its project's deserved quota: each
    victim is taken while its project holds more than its deserved quota. Whatever the
    order, the last victim of a project was taken while it held at most what it held
    at most during the cycle (U: at the start plus what it gained), less its other
    victims, so U - reclaimed + the largest victim must exceed the deserved quota."""
    queues = {q.name: q for q in snap.queues}
    work = {w.id: w for w in snap.workloads}
    pool_of = {n.name: n.pool for n in snap.nodes}

    def gpus(w: WorkloadSpec, pods: object) -> float:
        groups = {g.name: g.request.gpus for g in w.groups}
        return sum(groups[p.group] for p in pods)  # type: ignore[attr-defined]

    most: dict[tuple[str, str], float] = defaultdict(float)
    taken: dict[tuple[str, str], list[float]] = defaultdict(list)
    for w in snap.workloads:
        if w.pods:
            most[(w.project, pool_of[w.pods[0].node])] += gpus(w, w.pods)
    for d in result.decisions:
        w = work[d.workload]
        if isinstance(d, Allocate | Expand) and d.pods:
            most[(w.project, pool_of[d.pods[0].node])] += gpus(w, d.pods)
        elif isinstance(d, Evict) and d.reason_kind == EVICT_RECLAIM and w.pods:
            taken[(w.project, pool_of[w.pods[0].node])].append(gpus(w, w.pods))
        elif isinstance(d, Shrink) and d.reason.startswith("reclaimed by"):
            taken[(w.project, pool_of[d.pods[0].node])].extend(gpus(w, [p]) for p in d.pods)
    for (project, pool), victims in taken.items():
        quota = queues[project].quota.get(pool)
        deserved = quota.gpus if quota is not None else 0.0
        assert most[(project, pool)] - sum(victims) + max(victims) > deserved + 1e-9, project


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(clusters())
def test_a_workload_wholly_within_its_deserved_quota_is_never_reclaimed(
    snap: ClusterSnapshot,
) -> None:
    for _ in range(MAX_CYCLES):
        result = run_cycle(snap)
        _check_in_quota_work_kept(snap, result)
        if not result.changed:
            break
        snap = apply_result(snap, result)
