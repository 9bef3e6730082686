"""Submitting workloads and acting on them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import slug_re
from django.db import IntegrityError, transaction
from django.utils import timezone

from scheduler_core import access
from scheduler_core.choices import (
    PLACED_STATES,
    TERMINAL_STATES,
    EventType,
    WorkloadKind,
    WorkloadStatus,
)
from scheduler_core.db.bulk_reads import existing_keys
from scheduler_core.db.bulk_writes import copy_unsaved, delete_rows, insert_objects, insert_rows
from scheduler_core.engine import transitions
from scheduler_core.live_events.batch import EventBatch
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import (
    Allocation,
    NodePool,
    Project,
    Workload,
    WorkloadCandidatePool,
)
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.schemas.workloads import NewPriority, PodGroup, WorkloadSubmission
from scheduler_core.services.errors import Conflict, FieldErrors
from scheduler_core.workload_fit import never_fits, stored_pool_sizes


@dataclass
class WorkloadRequest:
    """What a user asks for: a project, a name, candidate pools and the workload's shape
    (checked by `scheduler_core.schemas.workloads`); defaults follow the workload kind."""

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
    checked: WorkloadSubmission | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_shape(
        cls, *, project: Project, name: str, pools: Sequence[NodePool], shape: WorkloadSubmission
    ) -> WorkloadRequest:
        """A request whose shape its caller has checked already (the API does, to answer
        every problem of a body at once)."""
        return cls(project=project, name=name, pools=pools, checked=shape, **shape.given())

    def shape(self) -> WorkloadSubmission:
        """The shape it asks for, checked (raises SchemaInvalid)."""
        if self.checked is not None:
            return self.checked
        return validate(WorkloadSubmission, self._stated())

    def shape_key(self) -> str | None:
        """What identifies its shape and pools, so that many requests of one shape are
        checked once; None for a shape its caller checked already."""
        if self.checked is not None:
            return None
        try:
            stated = json.dumps(self._stated(), sort_keys=True)
        except (TypeError, ValueError):  # not JSON: the schema will say what is wrong
            return None
        return f"{stated}|{[p.pk for p in self.pools]}"

    def _stated(self) -> dict[str, Any]:
        stated: dict[str, Any] = {
            "kind": self.kind,
            "priority": self.priority,
            "preemptible": self.preemptible,
            "node_selector": self.node_selector or {},
            "weight": self.weight,
            "backoff_limit": self.backoff_limit,
            "spec": self.spec or {},
        }
        if self.groups:
            stated["groups"] = self.groups
        else:
            stated |= {"pods": self.pods, "min_pods": self.min_pods, "gpus": self.gpus}
            stated |= {"cpu": self.cpu, "memory": self.memory}
        return {k: v for k, v in stated.items() if v is not None}


@dataclass(frozen=True, slots=True)
class _Checked:
    """The workload fields that follow from a request's checked shape, and its pools."""

    pools: list[NodePool]
    fields: dict[str, Any]
    json_fields: dict[str, str]  # as JSON text: each workload gets its own copy

    def template(self, *, user, now) -> Workload:
        """An unsaved workload of this shape, submitted by `user` at `now` (no project or
        name yet): what `workload` copies."""
        return Workload(
            **self.fields,
            submitted_by=user if access.is_authenticated(user) else None,
            submitted_at=now,
            status=WorkloadStatus.PENDING,
            pending_reason="waiting for the scheduler's next cycle",
        )

    def workload(self, req: WorkloadRequest, template: Workload) -> Workload:
        """An unsaved workload for the request, a copy of `template` (its JSON fields its
        own copies)."""
        return copy_unsaved(
            template,
            project=req.project,
            name=req.name,
            **{k: orjson.loads(v) for k, v in self.json_fields.items()},
        )


class _Checker:
    """Checks requests against the schema and their pools' sizes, each distinct shape
    once: a sweep or a load test submits thousands of workloads of a few shapes."""

    def __init__(self) -> None:
        self.sizes = stored_pool_sizes()
        self.seen: dict[str, _Checked] = {}

    @cached_property
    def all_pools(self) -> list[NodePool]:
        """Every pool: the candidates of a request that names none."""
        return list(NodePool.objects.all())

    def check(self, req: WorkloadRequest) -> _Checked:
        """The request's checked shape, once its name is usable, its shape matches the
        schema and its pods and gang fit the candidate pools (raises ValidationError)."""
        errors = FieldErrors()
        if not req.name or len(req.name) > 100:
            errors.add("name", "is required (at most 100 characters)")
        elif not slug_re.fullmatch(req.name):
            errors.add(
                "name",
                f"use letters, digits, dashes and underscores (like 'resnet-50'), got {req.name!r}",
            )
        key = req.shape_key()
        known = self.seen.get(key) if key is not None else None
        if known is not None:
            errors.raise_if_any()
            return known
        try:
            shape = req.shape()
        except SchemaInvalid as exc:
            errors.extend(exc.by_field())
        errors.raise_if_any()
        groups = shape.pod_groups()
        for field_key, problem in never_fits(
            groups, list(req.pools) or self.all_pools, self.sizes, use_groups=bool(shape.groups)
        ):
            errors.add(field_key, problem)
        errors.raise_if_any()
        fields = _shape_fields(shape, groups)
        as_json = {k: json.dumps(fields.pop(k)) for k in ("groups", "node_selector", "spec")}
        checked = _Checked(list(req.pools), fields, as_json)
        if key is not None:
            self.seen[key] = checked
        return checked


def _shape_fields(shape: WorkloadSubmission, groups: list[PodGroup]) -> dict[str, Any]:
    """The workload fields that follow from a checked shape, the kind's defaults applied."""
    single = shape.groups is None
    main = groups[0]
    priority, preemptible = shape.priority_and_preemptible()
    return {
        "kind": shape.kind,
        "priority": priority,
        "preemptible": preemptible,
        "pods": sum(g.pods for g in groups),
        "min_pods": sum(g.gang for g in groups),
        "gpus": main.gpus if single else 0,
        "cpu": main.cpu if single else 0,
        "memory": main.memory if single else 0,
        "groups": [] if single else [g.model_dump() for g in groups],
        "node_selector": shape.node_selector,
        "weight": shape.weight,
        "backoff_limit": shape.backoff_limit,
        "spec": shape.spec.model_dump(exclude_unset=True),
    }


def _existing_names(requests: Sequence[WorkloadRequest]) -> set[tuple[int, str]]:
    return existing_keys(Workload, ("project", "name"), [(r.project.pk, r.name) for r in requests])


def _insert(
    requests: Sequence[WorkloadRequest],
    validated: Sequence[_Checked],
    *,
    user,
    now,
) -> list[Workload]:
    """Write validated workloads, their candidate pools and `submitted` events in a few bulk
    INSERTs, publish the events after commit, and ask for one cycle."""
    templates: dict[int, Workload] = {}
    workloads = []
    for req, checked in zip(requests, validated, strict=True):
        template = templates.get(id(checked))
        if template is None:
            template = templates[id(checked)] = checked.template(user=user, now=now)
        workloads.append(checked.workload(req, template))
    insert_objects(workloads)  # a name taken: IntegrityError (see _clash)
    insert_rows(
        WorkloadCandidatePool,
        ("workload", "pool", "preference"),
        [
            (w.pk, p.pk, i)
            for w, checked in zip(workloads, validated, strict=True)
            for i, p in enumerate(checked.pools)
        ],
    )
    events = EventBatch(now)
    reason = f"submitted by {getattr(user, 'username', None) or 'system'}"
    for workload in workloads:
        events.add(type=EventType.SUBMITTED, workload=workload, reason=reason)
    events.flush()
    request_cycle()
    return workloads


def workload_submit(*, user, request: WorkloadRequest) -> Workload:
    """Queue a new workload in a project the user may submit to."""
    if not access.can_submit_to(user, request.project):
        raise PermissionDenied(f"you cannot submit workloads to project {request.project}")
    validated = _Checker().check(request)
    try:
        with transaction.atomic():
            return _insert([request], [validated], user=user, now=timezone.now())[0]
    except IntegrityError as exc:
        if _existing_names([request]):
            raise Conflict({"name": _name_taken(request)}) from exc
        raise _clash() from exc


def workload_submit_bulk(*, user, requests: Sequence[WorkloadRequest]) -> list[Workload]:
    """Queue many workloads at once: all of them, or none if any is invalid."""
    allowed: dict[int, bool] = {}
    for i, req in enumerate(requests):
        if req.project.pk not in allowed:
            allowed[req.project.pk] = access.can_submit_to(user, req.project)
        if not allowed[req.project.pk]:
            raise PermissionDenied(f"workloads[{i}]: you cannot submit to project {req.project}")
    checker = _Checker()
    errors = FieldErrors()
    validated = []
    seen: set[tuple[int, str]] = set()
    for i, req in enumerate(requests):
        try:
            validated.append(checker.check(req))
        except ValidationError as exc:
            errors.extend({f"workloads[{i}].{f}": m for f, m in exc.message_dict.items()})
        key = (req.project.pk, req.name)
        if key in seen:
            errors.add(f"workloads[{i}].name", f"{req.name!r} appears twice in this request")
        seen.add(key)
    if errors:
        _add_taken_names(errors, requests)
        errors.raise_if_any()
    try:
        with transaction.atomic():
            return _insert(requests, validated, user=user, now=timezone.now())
    except IntegrityError as exc:
        # Names are looked up only once the insert finds one taken: a submission whose
        # names are all new (almost every one) reads nothing before it writes.
        _add_taken_names(errors, requests)
        errors.raise_if_any()
        raise _clash() from exc


def _clash() -> Conflict:
    """A write refused with no name taken now: a concurrent change won the race."""
    return Conflict(
        {"name": "a workload of this name, or its project or pool, changed at this moment; "
         "submit it again"}
    )  # fmt: skip


def _add_taken_names(errors: FieldErrors, requests: Sequence[WorkloadRequest]) -> None:
    """Add a conflict for each request whose name its project has already."""
    existing = _existing_names(requests)
    for i, req in enumerate(requests):
        if (req.project.pk, req.name) in existing:
            errors.add_conflict(f"workloads[{i}].name", _name_taken(req))


def _name_taken(request: WorkloadRequest) -> str:
    return f"a workload named {request.name!r} already exists in project {request.project}"


def _locked(workload: Workload) -> Workload:
    return (
        Workload.objects.select_for_update(no_key=True)
        .select_related("project__department")
        .get(pk=workload.pk)
    )


def _require_actor(user, workload: Workload) -> None:
    if not access.can_submit_to(user, workload.project):
        raise PermissionDenied(f"you cannot act on workloads of project {workload.project}")


def workloads_release(workload_ids: list[int]) -> dict[int, int]:
    """Free the workloads' pods when they stop running (no event, no cycle; a run still
    on them keeps running until it is stopped): one read, then two set-based statements.
    Returns each workload's pool."""
    rows = list(
        Allocation.objects.filter(workload_id__in=workload_ids).values_list(
            "pk", "workload_id", "node__pool_id"
        )
    )
    delete_rows(Allocation, [pk for pk, _, _ in rows])
    return {workload_id: pool_id for _, workload_id, pool_id in rows}


def workload_cancel(*, user, workload: Workload) -> Workload:
    """Stop a workload for good: its pods are freed and it will not run again."""
    _require_actor(user, workload)
    with transaction.atomic():
        workload = _locked(workload)
        if workload.status in TERMINAL_STATES:
            raise Conflict({"status": f"workload is already {workload.status}"})
        workloads_release([workload.pk])
        transitions.cancel(workload, at=timezone.now())
        workload.save()
        event_record(
            type=EventType.DELETED, workload=workload, reason=f"cancelled by {user.username}"
        )
        request_cycle()
    return workload


def workload_set_priority(*, user, workload: Workload, priority: int) -> Workload:
    """Change a workload's priority (it is re-ordered at the next cycle)."""
    _require_actor(user, workload)
    try:
        priority = validate(NewPriority, {"priority": priority}).priority
    except SchemaInvalid as exc:
        raise ValidationError(exc.by_field()) from None
    with transaction.atomic():
        workload = _locked(workload)
        if workload.status in TERMINAL_STATES:
            raise Conflict({"status": f"workload is already {workload.status}"})
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
        if workload.status not in (WorkloadStatus.PENDING, *PLACED_STATES):
            raise Conflict(
                {
                    "status": f"only pending or running workloads can be "
                    f"suspended; this one is {workload.status}"
                }
            )
        workloads_release([workload.pk])
        transitions.suspend(workload, why="suspended by a user")
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
            raise Conflict(
                {
                    "status": f"only suspended workloads can be resumed; "
                    f"this one is {workload.status}"
                }
            )
        transitions.resume(workload, why="waiting for the scheduler's next cycle")
        workload.save()
        event_record(
            type=EventType.RESUMED, workload=workload, reason=f"resumed by {user.username}"
        )
        request_cycle()
    return workload
