"""Submitting workloads and acting on them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import slug_re
from django.db import IntegrityError, transaction
from django.utils import timezone

from scheduler_core import access
from scheduler_core.choices import (
    DEFAULT_PREEMPTIBLE,
    DEFAULT_PRIORITY,
    TERMINAL_STATES,
    EventType,
    WorkloadKind,
    WorkloadStatus,
)
from scheduler_core.live_events.batch import EventBatch
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import (
    Allocation,
    Node,
    NodePool,
    Project,
    Workload,
    WorkloadCandidatePool,
)
from scheduler_core.services.errors import FieldErrors, require_non_negative

GROUP_KEYS = {"name", "pods", "min_pods", "gpus", "cpu", "memory"}


@dataclass
class WorkloadRequest:
    """What a user asks for; defaults follow the workload kind."""

    project: Project
    name: str
    kind: str = WorkloadKind.TRAINING
    priority: int | None = None
    preemptible: bool | None = None
    pods: int = 1
    min_pods: int | None = None
    gpus: float = 0
    cpu: float = 0
    memory: float = 0
    groups: list[dict[str, Any]] = field(default_factory=list)
    pools: Sequence[NodePool] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    weight: float = 1.0
    backoff_limit: int | None = None
    spec: dict[str, Any] = field(default_factory=dict)


def _check_group(errors: FieldErrors, prefix: str, group: dict[str, Any]) -> None:
    pods, min_pods = group.get("pods"), group.get("min_pods")
    if not isinstance(pods, int) or isinstance(pods, bool) or pods < 1:
        errors.add(f"{prefix}pods", f"must be a whole number of at least 1, got {pods!r}")
    elif min_pods is not None:
        if not isinstance(min_pods, int) or isinstance(min_pods, bool) or min_pods < 1:
            errors.add(
                f"{prefix}min_pods", f"must be a whole number of at least 1, got {min_pods!r}"
            )
        elif min_pods > pods:
            errors.add(f"{prefix}min_pods", f"must not exceed pods ({pods}), got {min_pods}")
    for key in ("gpus", "cpu", "memory"):
        require_non_negative(errors, f"{prefix}{key}", group.get(key, 0))
    gpus = group.get("gpus", 0)
    if isinstance(gpus, int | float) and gpus > 1 and not float(gpus).is_integer():
        errors.add(
            f"{prefix}gpus",
            f"a pod asks for a fraction of one GPU (below 1) or whole GPUs, got {gpus:g}",
        )


def _normalised_groups(req: WorkloadRequest) -> list[dict[str, Any]]:
    if req.groups:
        return [
            {
                "name": str(g.get("name", f"group-{i}")),
                "pods": g.get("pods", 1),
                "min_pods": g.get("min_pods", g.get("pods", 1)),
                "gpus": g.get("gpus", 0),
                "cpu": g.get("cpu", 0),
                "memory": g.get("memory", 0),
            }
            for i, g in enumerate(req.groups)
        ]
    return [
        {
            "name": "main",
            "pods": req.pods,
            "min_pods": req.min_pods if req.min_pods is not None else req.pods,
            "gpus": req.gpus,
            "cpu": req.cpu,
            "memory": req.memory,
        }
    ]


def _fits_somewhere(
    errors: FieldErrors,
    groups: list[dict[str, Any]],
    pools: Sequence[NodePool],
    nodes_by_pool: dict[int, list[Node]],
    use_groups: bool,
) -> None:
    """A pod must fit on one node, and the gang's minimum in one pool's total capacity."""
    pool_names = ", ".join(p.name for p in pools) or "any pool"
    nodes = [n for p in pools for n in nodes_by_pool.get(p.pk, [])]
    if not nodes:
        errors.add("pools", f"{pool_names} has no nodes")
        return
    for i, g in enumerate(groups):
        prefix = f"groups[{i}]." if use_groups else ""
        for key, attr, unit in (
            ("gpus", "gpu_count", "GPUs"),
            ("cpu", "cpu", "CPU cores"),
            ("memory", "memory", "GiB of memory"),
        ):
            largest = max(getattr(n, attr) for n in nodes)
            want = g[key]
            if key != "gpus" and largest == 0:
                continue  # nodes that do not declare cpu/memory do not limit it
            if want > largest:
                errors.add(
                    f"{prefix}{key}",
                    f"a pod asks for {want:g} {unit} but the largest node in {pool_names} "
                    f"has {largest:g}",
                )
    gang_gpus = sum(
        g["min_pods"] * (math.ceil(g["gpus"]) if g["gpus"] >= 1 else g["gpus"]) for g in groups
    )
    best = max(sum(n.gpu_count for n in nodes_by_pool.get(p.pk, [])) for p in pools)
    if gang_gpus > best:
        errors.add(
            "min_pods" if not use_groups else "groups",
            f"the gang needs {gang_gpus:g} GPUs at once but the largest candidate pool "
            f"({pool_names}) has {best:g} GPUs in total",
        )


def _validate(
    req: WorkloadRequest, *, nodes_by_pool: dict[int, list[Node]], all_pools: list[NodePool]
) -> tuple[list[dict[str, Any]], list[NodePool]]:
    errors = FieldErrors()
    if not req.name or len(req.name) > 100:
        errors.add("name", "is required (at most 100 characters)")
    elif not slug_re.fullmatch(req.name):
        errors.add(
            "name",
            f"use letters, digits, dashes and underscores (like 'resnet-50'), got {req.name!r}",
        )
    if req.kind not in WorkloadKind.values:
        errors.add("kind", f"must be one of {', '.join(WorkloadKind.values)}, got {req.kind!r}")
    if req.weight is None or req.weight <= 0:
        errors.add("weight", f"must be above 0, got {req.weight!r}")
    if req.backoff_limit is not None and req.backoff_limit < 0:
        errors.add("backoff_limit", f"must be 0 or more, got {req.backoff_limit}")
    for key, value in (req.node_selector or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            errors.add("node_selector", "must map label names to label values (strings)")
            break
    duration = (req.spec or {}).get("duration")
    if duration is not None and (not isinstance(duration, int | float) or duration <= 0):
        errors.add("spec.duration", f"must be a number of seconds above 0, got {duration!r}")
    groups = _normalised_groups(req)
    use_groups = bool(req.groups)
    names = set()
    for i, g in enumerate(groups):
        _check_group(errors, f"groups[{i}]." if use_groups else "", g)
        if use_groups:
            unknown = set(req.groups[i]) - GROUP_KEYS
            if unknown:
                errors.add(f"groups[{i}]", f"unknown fields: {', '.join(sorted(unknown))}")
            if g["name"] in names:
                errors.add(f"groups[{i}].name", f"group name {g['name']!r} is used twice")
            names.add(g["name"])
    if req.kind == WorkloadKind.CPU and any(g["gpus"] for g in groups):
        errors.add("gpus", "a CPU-only workload cannot ask for GPUs")
    pools = list(req.pools) or all_pools
    if not errors:
        _fits_somewhere(errors, groups, pools, nodes_by_pool, use_groups)
    errors.raise_if_any()
    return groups, list(req.pools)


def _build(req: WorkloadRequest, *, user, groups, now) -> Workload:
    """An unsaved workload for a validated request, with the kind's defaults applied."""
    single = len(groups) == 1 and not req.groups
    main = groups[0]
    priority = req.priority if req.priority is not None else DEFAULT_PRIORITY[req.kind]
    if req.preemptible is not None:
        preemptible = req.preemptible
    elif req.priority is not None:
        preemptible = priority < 100  # priority >= 100 is non-preemptible by default
    else:
        preemptible = DEFAULT_PREEMPTIBLE[req.kind]
    return Workload(
        project=req.project,
        name=req.name,
        kind=req.kind,
        priority=priority,
        preemptible=preemptible,
        pods=main["pods"] if single else sum(g["pods"] for g in groups),
        min_pods=main["min_pods"] if single else sum(g["min_pods"] for g in groups),
        gpus=main["gpus"] if single else 0,
        cpu=main["cpu"] if single else 0,
        memory=main["memory"] if single else 0,
        groups=[] if single else groups,
        node_selector=req.node_selector or {},
        weight=req.weight,
        backoff_limit=req.backoff_limit,
        spec=req.spec or {},
        submitted_by=user if access.is_authenticated(user) else None,
        submitted_at=now,
        status=WorkloadStatus.PENDING,
        pending_reason="waiting for the scheduler's next cycle",
    )


def _existing_names(requests: Sequence[WorkloadRequest]) -> set[tuple[int, str]]:
    projects = {r.project.pk for r in requests}
    names = {r.name for r in requests}
    return set(
        Workload.objects.filter(project_id__in=projects, name__in=names).values_list(
            "project_id", "name"
        )
    )


def _insert(
    requests: Sequence[WorkloadRequest],
    validated: Sequence[tuple[list[dict[str, Any]], list[NodePool]]],
    *,
    user,
    now,
) -> list[Workload]:
    """Write validated workloads, their candidate pools and `submitted` events in a few bulk
    INSERTs, publish the events after commit, and ask for one cycle."""
    workloads = [
        _build(req, user=user, groups=groups, now=now)
        for req, (groups, _pools) in zip(requests, validated, strict=True)
    ]
    try:
        with transaction.atomic():
            Workload.objects.bulk_create(workloads)
    except IntegrityError as exc:  # a concurrent submission took a name
        raise ValidationError(
            {"name": "a workload with this name was just created in the same project"}
        ) from exc
    WorkloadCandidatePool.objects.bulk_create(
        [
            WorkloadCandidatePool(workload=w, pool=p, preference=i)
            for w, (_groups, pools) in zip(workloads, validated, strict=True)
            for i, p in enumerate(pools)
        ]
    )
    events = EventBatch(now)
    reason = f"submitted by {getattr(user, 'username', None) or 'system'}"
    for workload in workloads:
        events.add(type=EventType.SUBMITTED, workload=workload, reason=reason)
    events.flush()
    request_cycle()
    return workloads


def _pool_context() -> tuple[dict[int, list[Node]], list[NodePool]]:
    nodes_by_pool: dict[int, list[Node]] = {}
    for node in Node.objects.only("pool_id", "gpu_count", "cpu", "memory"):
        nodes_by_pool.setdefault(node.pool_id, []).append(node)
    return nodes_by_pool, list(NodePool.objects.all())


def workload_submit(*, user, request: WorkloadRequest) -> Workload:
    """Queue a new workload in a project the user may submit to."""
    if not access.can_submit_to(user, request.project):
        raise PermissionDenied(f"you cannot submit workloads to project {request.project}")
    nodes_by_pool, all_pools = _pool_context()
    validated = _validate(request, nodes_by_pool=nodes_by_pool, all_pools=all_pools)
    if (request.project.pk, request.name) in _existing_names([request]):
        raise ValidationError(
            {
                "name": f"a workload named {request.name!r} already exists in project "
                f"{request.project}"
            }
        )
    with transaction.atomic():
        return _insert([request], [validated], user=user, now=timezone.now())[0]


def workload_submit_bulk(*, user, requests: Sequence[WorkloadRequest]) -> list[Workload]:
    """Queue many workloads at once: all of them, or none if any is invalid."""
    errors: dict[str, list[str]] = {}
    allowed: dict[int, bool] = {}
    for i, req in enumerate(requests):
        if req.project.pk not in allowed:
            allowed[req.project.pk] = access.can_submit_to(user, req.project)
        if not allowed[req.project.pk]:
            raise PermissionDenied(f"workloads[{i}]: you cannot submit to project {req.project}")
    nodes_by_pool, all_pools = _pool_context()
    existing = _existing_names(requests)
    validated = []
    seen: set[tuple[int, str]] = set()
    for i, req in enumerate(requests):
        try:
            validated.append(_validate(req, nodes_by_pool=nodes_by_pool, all_pools=all_pools))
        except ValidationError as exc:
            for fld, msgs in exc.message_dict.items():
                errors.setdefault(f"workloads[{i}].{fld}", []).extend(msgs)
        key = (req.project.pk, req.name)
        if key in seen:
            errors.setdefault(f"workloads[{i}].name", []).append(
                f"{req.name!r} appears twice in this request"
            )
        elif key in existing:
            errors.setdefault(f"workloads[{i}].name", []).append(
                f"a workload named {req.name!r} already exists in project {req.project}"
            )
        seen.add(key)
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        return _insert(requests, validated, user=user, now=timezone.now())


def _locked(workload: Workload) -> Workload:
    return (
        Workload.objects.select_for_update()
        .select_related("project__department")
        .get(pk=workload.pk)
    )


def _require_actor(user, workload: Workload) -> None:
    if not access.can_submit_to(user, workload.project):
        raise PermissionDenied(f"you cannot act on workloads of project {workload.project}")


def workload_release(workload: Workload) -> None:
    """Free a workload's pods (no event, no cycle): used when it stops running."""
    Allocation.objects.filter(workload=workload).delete()


def workload_cancel(*, user, workload: Workload) -> Workload:
    """Stop a workload for good: its pods are freed and it will not run again."""
    _require_actor(user, workload)
    with transaction.atomic():
        workload = _locked(workload)
        if workload.status in TERMINAL_STATES:
            raise ValidationError({"status": f"workload is already {workload.status}"})
        workload_release(workload)
        workload.status = WorkloadStatus.CANCELLED
        workload.finished_at = timezone.now()
        workload.pending_reason = ""
        workload.queue_position = None
        workload.save()
        event_record(
            type=EventType.DELETED, workload=workload, reason=f"cancelled by {user.username}"
        )
        request_cycle()
    return workload


def workload_set_priority(*, user, workload: Workload, priority: int) -> Workload:
    """Change a workload's priority (it is re-ordered at the next cycle)."""
    _require_actor(user, workload)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ValidationError({"priority": f"must be a whole number, got {priority!r}"})
    with transaction.atomic():
        workload = _locked(workload)
        if workload.status in TERMINAL_STATES:
            raise ValidationError({"status": f"workload is already {workload.status}"})
        old = workload.priority
        workload.priority = priority
        workload.save()
        event_record(
            type=EventType.PRIORITY_CHANGED,
            workload=workload,
            reason=f"priority {old} -> {priority} by {user.username}",
            details={"from": old, "to": priority},
        )
        request_cycle()
    return workload


def workload_suspend(*, user, workload: Workload) -> Workload:
    """Take a workload out of scheduling: its pods are freed, it keeps its place in history."""
    _require_actor(user, workload)
    with transaction.atomic():
        workload = _locked(workload)
        if workload.status not in (WorkloadStatus.PENDING, WorkloadStatus.RUNNING):
            raise ValidationError(
                {
                    "status": f"only pending or running workloads can be "
                    f"suspended; this one is {workload.status}"
                }
            )
        workload_release(workload)
        workload.status = WorkloadStatus.SUSPENDED
        workload.pending_reason = "suspended by a user"
        workload.queue_position = None
        workload.save()
        event_record(
            type=EventType.SUSPENDED, workload=workload, reason=f"suspended by {user.username}"
        )
        request_cycle()
    return workload


def workload_resume(*, user, workload: Workload) -> Workload:
    """Put a suspended workload back in its queue."""
    _require_actor(user, workload)
    with transaction.atomic():
        workload = _locked(workload)
        if workload.status != WorkloadStatus.SUSPENDED:
            raise ValidationError(
                {
                    "status": f"only suspended workloads can be resumed; "
                    f"this one is {workload.status}"
                }
            )
        workload.status = WorkloadStatus.PENDING
        workload.pending_reason = "waiting for the scheduler's next cycle"
        workload.save()
        event_record(
            type=EventType.RESUMED, workload=workload, reason=f"resumed by {user.username}"
        )
        request_cycle()
    return workload
