"""The live cluster as a scenario (docs: /work/shared/scenarios/FORMAT.md).

A what-if run replays a copy of the cluster as it is now: pools with their settings, nodes
(with their state: ready, cordoned or down), the quota tree, and every pending or running
workload with its placement, how long it has run, and the simulated runtime it still has
to go. Names in the copy are the live names; a workload is `<project>/<name>` because
workload names are unique per project only. Running workloads keep their real start (a
negative `started_at`), so a pool's minimum guaranteed runtime protects them as it would;
waiting ones keep how long they have waited (a negative `pending_since`, and
`room_wait_since`), and every workload how often it was preempted (`preemptions`), so a
pool that weighs lost work or bounds preemptions decides as it would.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Prefetch
from django.utils import timezone

from scheduler_core.choices import PLACED_STATES, NodeState, WorkloadStatus
from scheduler_core.engine.reasons import QUEUE_TURN_KINDS
from scheduler_core.models import (
    Allocation,
    Department,
    Node,
    NodePool,
    Project,
    Quota,
    Workload,
    WorkloadCandidatePool,
)

RESOURCES = ("gpus", "cpu", "memory")


def workload_key(project_name: str, workload_name: str) -> str:
    """A workload's name in the copy: unique across projects."""
    return f"{project_name}/{workload_name}"


def scenario_from_live_cluster(*, now: datetime | None = None, name: str = "live-copy") -> dict:
    """The live cluster as a FORMAT.md scenario dict with no steps (a handful of queries)."""
    now = now or timezone.now()
    pools = list(NodePool.objects.order_by("name"))
    nodes = list(Node.objects.select_related("pool").order_by("pool__name", "name"))
    departments = list(Department.objects.order_by("name"))
    projects = list(Project.objects.select_related("department").order_by("name"))
    quotas = list(Quota.objects.select_related("pool", "department", "project"))
    workloads = _active_workloads()
    quota_by_owner = _quotas_by_owner(quotas)
    first_submit = workloads[0].submitted_at if workloads else now
    up_nodes = {n.name for n in nodes if n.state != NodeState.DOWN}
    # A scenario wants project and department names distinct; live ones may clash.
    project_names = {p.name for p in projects}
    department_name = {
        d.pk: (f"{d.name}-department" if d.name in project_names else d.name) for d in departments
    }
    return {
        "name": name,
        "description": f"copy of the live cluster at {now:%Y-%m-%d %H:%M:%S} UTC",
        "config": {},
        "pools": [_pool(p) for p in pools],
        "nodes": [_node(n) for n in nodes],
        "departments": [
            {
                **_queue(d, quota_by_owner.get(("department", d.name), [])),
                "name": department_name[d.pk],
            }
            for d in departments
        ],
        "projects": [
            {
                **_queue(p, quota_by_owner.get(("project", p.name), [])),
                "department": department_name[p.department_id],
            }
            for p in projects
        ],
        "workloads": [
            _workload(w, now=now, first_submit=first_submit, up_nodes=up_nodes) for w in workloads
        ],
        "steps": [],
    }


def _active_workloads() -> list[Workload]:
    """Pending and placed workloads, oldest first, with their pods and pool choices."""
    return list(
        Workload.objects.filter(status__in=[WorkloadStatus.PENDING, *PLACED_STATES])
        .select_related("project")
        .prefetch_related(
            Prefetch(
                "allocations",
                queryset=Allocation.objects.select_related("node").order_by("group", "pod_index"),
            ),
            Prefetch(
                "pool_choices",
                queryset=WorkloadCandidatePool.objects.select_related("pool"),
            ),
        )
        .order_by("submitted_at", "id")
    )


def _quotas_by_owner(quotas: list[Quota]) -> dict[tuple[str, str], list[Quota]]:
    """Quotas by ("project" | "department", name)."""
    by_owner: dict[tuple[str, str], list[Quota]] = {}
    for quota in quotas:
        if quota.project is not None:
            owner = ("project", quota.project.name)
        else:
            assert quota.department is not None  # a quota has one owner (a constraint)
            owner = ("department", quota.department.name)
        by_owner.setdefault(owner, []).append(quota)
    return by_owner


def _pool(pool: NodePool) -> dict[str, Any]:
    return {
        "name": pool.name,
        "policy": pool.policy,
        "placement": pool.placement,
        "preemption": pool.preemption,
        "consolidation": pool.consolidation,
        "max_consolidation_evaluations": pool.max_consolidation_evaluations,
        "consolidation_weighs_lost_work": pool.consolidation_weighs_lost_work,
        "consolidation_within_quota": pool.consolidation_within_quota,
        "reclaim_weighs_lost_work": pool.reclaim_weighs_lost_work,
        "reserve_for_gangs": pool.reserve_for_gangs,
        "max_reclaims_per_cycle": pool.max_reclaims_per_cycle,
        "max_preemptions_per_cycle": pool.max_preemptions_per_cycle,
        "max_preemptions_per_workload": pool.max_preemptions_per_workload,
        "preemption_loop_evictions": pool.preemption_loop_evictions,
        "reclaim_lost_work_ratio": pool.reclaim_lost_work_ratio,
        "min_guaranteed_runtime": pool.min_guaranteed_runtime,
        "over_quota_weight_from_quota": pool.over_quota_weight_from_quota,
        "fairshare_mode": pool.fairshare_mode,
        "time_based": {
            "window": pool.time_based_window,
            "half_life": pool.time_based_half_life,
            "k": pool.time_based_k,
        },
    }


def _node(node: Node) -> dict[str, Any]:
    data: dict[str, Any] = {"name": node.name, "pool": node.pool.name, "gpus": node.gpu_count}
    # 0 cpu/memory on a live node means "not tracked": in a scenario, omitted = unlimited.
    if node.cpu:
        data["cpu"] = node.cpu
    if node.memory:
        data["memory"] = node.memory
    if node.labels:
        data["labels"] = dict(node.labels)
    if node.state != NodeState.READY:
        data["state"] = node.state
    return data


def _queue(owner: Department | Project, quotas: list[Quota]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": owner.name,
        "rank": owner.rank,
        "over_quota_weight": owner.over_quota_weight,
    }
    deserved = {
        q.pool.name: {r: getattr(q, r) for r in RESOURCES if r == "gpus" or getattr(q, r)}
        for q in quotas
    }
    limits = {
        q.pool.name: {
            r: getattr(q, f"limit_{r}") for r in RESOURCES if getattr(q, f"limit_{r}") is not None
        }
        for q in quotas
    }
    if deserved:
        data["quota"] = deserved
    limits = {pool: values for pool, values in limits.items() if values}
    if limits:
        data["limit"] = limits
    return data


def running_for(workload: Workload, *, now: datetime) -> float:
    """Seconds since a running workload (re)started; 0 for a pending one."""
    if workload.status not in PLACED_STATES or workload.started_at is None:
        return 0.0
    return _seconds_before(workload.started_at, now)


def run_length(workload: Workload, *, now: datetime) -> float | None:
    """The `duration` of the copy: how long this (re)start runs in all (None: until stopped).

    The simulator completes a workload `duration` after its `started_at`; a running one
    starts at minus `running_for`, so what is left is `duration - progress - running_for`
    (the progress saved at the last checkpoint counts as done). At least one simulated
    second is always left, so nothing completes before the run starts.
    """
    duration = workload.duration
    if duration is None:
        return None
    elapsed = running_for(workload, now=now)
    remaining = duration - (workload.progress_seconds or 0.0) - elapsed
    return round(elapsed + max(remaining, 1.0), 3)


def _workload(
    workload: Workload, *, now: datetime, first_submit: datetime, up_nodes: set[str]
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": workload_key(workload.project.name, workload.name),
        "project": workload.project.name,
        "kind": workload.kind,
        "priority": workload.priority,
        "preemptible": workload.preemptible,
    }
    if workload.groups:
        data["groups"] = [dict(g) for g in workload.groups]
    else:
        data.update(pods=workload.pods, min_pods=workload.min_pods, gpus=workload.gpus)
        for resource in ("cpu", "memory"):
            if getattr(workload, resource):
                data[resource] = getattr(workload, resource)
    pools = [choice.pool.name for choice in workload.pool_choices.all()]
    if pools:
        data["pools"] = pools
    if workload.node_selector:
        data["node_selector"] = dict(workload.node_selector)
    if workload.weight != 1:
        data["weight"] = workload.weight
    data["submitted_at"] = round(max((workload.submitted_at - first_submit).total_seconds(), 0), 3)
    length = run_length(workload, now=now)
    if length is not None:
        data["duration"] = length
    if workload.backoff_limit is not None:
        data["backoff_limit"] = max(workload.backoff_limit - workload.restarts, 0)
    placed = [a.node.name for a in workload.allocations.all()]
    # A pod left on a node that just went down is about to be evicted: copy it as pending.
    if workload.status in PLACED_STATES and placed and set(placed) <= up_nodes:
        data["running_on"] = placed
        data["started_at"] = -running_for(workload, now=now)
    else:
        data.update(_waiting(workload, now=now))
    if workload.preemptions:
        data["preemptions"] = workload.preemptions
    if workload.quick_evictions:
        data["quick_evictions"] = workload.quick_evictions
    return data


def _waiting(workload: Workload, *, now: datetime) -> dict[str, float]:
    """How long a workload the copy holds as pending has waited, as times before the
    copy's start (0 is now): when it last went back to the queue (its submission, if
    never) and, where its queue's rules held it or a reclaim spent its wait, when its
    wait for room counts from. A pool that weighs lost work weighs that wait. One its
    queue's rules hold now has not begun to wait for room: if its turn comes at the
    copy's first cycle, its wait counts from then, as the live cycle would note it."""
    since = workload.pending_since or workload.submitted_at
    data = {"pending_since": -_seconds_before(since, now)}
    if workload.pending_reason_kind in QUEUE_TURN_KINDS:
        data["room_wait_since"] = 0.0
    elif workload.room_wait_since is not None:
        data["room_wait_since"] = -_seconds_before(workload.room_wait_since, now)
    return data


def _seconds_before(moment: datetime, now: datetime) -> float:
    """Seconds from `moment` to `now` (0 for a moment after it), to the millisecond."""
    return round(max((now - moment).total_seconds(), 0.0), 3)
