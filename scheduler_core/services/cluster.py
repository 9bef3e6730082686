"""Node pools and nodes: creating them, and cordon, drain, down/up."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from scheduler_core import access
from scheduler_core.choices import DEFAULT_BACKEND, EventType, NodeState
from scheduler_core.engine.profiles import DEFAULT_PROFILE_FOR_LABS, with_profile
from scheduler_core.engine.transitions import Cause
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Allocation, Node, NodePool, SchedulingEvent, Workload
from scheduler_core.schemas.backends import BACKEND_SETTINGS
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.schemas.pools import PoolSettings
from scheduler_core.services.errors import FieldErrors, check_slug_name, require_non_negative
from scheduler_core.services.runtime import workload_requeue


def _validate_pool_settings(settings: dict[str, Any], backend: str) -> dict[str, Any]:
    """The settings as given, once they match the pools' schema (PoolSettings) and the
    backend's own settings theirs (schemas.backends; `backend`: the pool's backend unless
    the settings change it), with a `profile` replaced by the settings it gives
    (engine.profiles.with_profile)."""
    try:
        given = with_profile(validate(PoolSettings, settings).given())
    except SchemaInvalid as exc:
        raise ValidationError(exc.by_field()) from None
    if "backend_settings" in given:
        given["backend_settings"] = _backend_settings(
            given.get("backend", backend), given["backend_settings"]
        )
    return given


def _backend_settings(backend: str, values: dict[str, Any]) -> dict[str, Any]:
    """A backend's settings as schemas.backends declares them, defaults left out."""
    model = BACKEND_SETTINGS.get(backend)
    if model is None:
        if values:
            raise ValidationError({"backend_settings": [f"the {backend} backend has no settings"]})
        return {}
    try:
        return validate(model, values).model_dump(exclude_unset=True)
    except SchemaInvalid as exc:
        raise ValidationError(exc.by_field("backend_settings")) from None


def pool_create(*, user, name: str, **settings: Any) -> NodePool:
    """Create a node pool with its scheduling settings: those of its `profile` (lab
    unless stated, engine.profiles), and any stated beside it."""
    settings.setdefault("profile", DEFAULT_PROFILE_FOR_LABS)
    access.require_system_admin(user, "manage pools and nodes")
    errors = FieldErrors()
    check_slug_name(errors, name)
    if NodePool.objects.filter(name=name).exists():
        errors.add_conflict("name", f"a pool named {name!r} already exists")
    errors.raise_if_any()
    values = _validate_pool_settings(settings, DEFAULT_BACKEND)
    return NodePool.objects.create(name=name, **values)


def pool_update(*, user, pool: NodePool, **settings: Any) -> NodePool:
    """Change a pool's policy or scheduling settings (a `profile` sets all of its own)."""
    access.require_system_admin(user, "manage pools and nodes")
    settings = _validate_pool_settings(settings, pool.backend)
    with transaction.atomic():
        for key, value in settings.items():
            setattr(pool, key, value)
        pool.save()
        request_cycle()
    return pool


def node_create(
    *,
    user,
    pool: NodePool,
    name: str,
    gpu_count: int = 0,
    gpu_model: str = "",
    cpu: float = 0,
    memory: float = 0,
    labels: dict[str, str] | None = None,
) -> Node:
    """Add a node to a pool."""
    access.require_system_admin(user, "manage pools and nodes")
    errors = FieldErrors()
    check_slug_name(errors, name)
    if not isinstance(gpu_count, int) or isinstance(gpu_count, bool) or gpu_count < 0:
        errors.add("gpu_count", f"must be a whole number of 0 or more, got {gpu_count!r}")
    require_non_negative(errors, "cpu", cpu)
    require_non_negative(errors, "memory", memory)
    if labels is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        errors.add("labels", "must map label names to values (strings)")
    if Node.objects.filter(name=name).exists():
        errors.add_conflict("name", f"a node named {name!r} already exists")
    errors.raise_if_any()
    with transaction.atomic():
        node = Node.objects.create(
            pool=pool,
            name=name,
            gpu_count=gpu_count,
            gpu_model=gpu_model,
            cpu=cpu,
            memory=memory,
            labels=labels or {},
            last_heartbeat=timezone.now(),
        )
        request_cycle()
    return node


def evict_pods_on_node(node: Node, *, reason: str, fault: bool) -> list[Workload]:
    """Evict every workload with a pod on `node` and re-queue it, keeping its last
    checkpoint (engine.transitions: the same rule as every other stopped run).

    A fault (node down) counts as a restart against the workload's backoff limit; once the
    limit is used up the workload fails. A drain does not count.
    """
    workload_ids = set(Allocation.objects.filter(node=node).values_list("workload_id", flat=True))
    workloads = list(
        Workload.objects.select_for_update(no_key=True).filter(pk__in=workload_ids).order_by("pk")
    )
    now = timezone.now()
    cause = Cause.FAULT if fault else Cause.DRAINED
    for workload in workloads:
        workload_requeue(workload=workload, cause=cause, why=reason, at=now, node=node)
    return workloads


def _set_state(node: Node, state: str, reason: str, *, silent: bool = False) -> Node:
    """Write a node's new state and its NODE_STATE event (`silent`: the liveness check
    made the change because the node's agent fell silent, not an admin)."""
    node = Node.objects.select_for_update(no_key=True).get(pk=node.pk)
    node.state = state
    node.save(update_fields=["state"])
    details: dict[str, Any] = {"state": state, "node": node.name}
    if silent:
        details["silent"] = True
    event_record(
        type=EventType.NODE_STATE, node=node, pool=node.pool, reason=reason, details=details
    )
    return node


def node_cordon(*, user, node: Node) -> Node:
    """Stop new pods from landing on a node; its pods keep running."""
    access.require_system_admin(user, "manage pools and nodes")
    with transaction.atomic():
        node = _set_state(node, NodeState.CORDONED, f"node {node.name} cordoned by {user}")
        request_cycle()
    return node


def node_uncordon(*, user, node: Node) -> Node:
    """Let a cordoned or down node take pods again."""
    access.require_system_admin(user, "manage pools and nodes")
    with transaction.atomic():
        node = _set_state(node, NodeState.READY, f"node {node.name} is ready ({user})")
        node.last_heartbeat = timezone.now()
        node.save(update_fields=["last_heartbeat"])
        request_cycle()
    return node


def node_drain(*, user, node: Node) -> Node:
    """Cordon a node and move its workloads elsewhere (they are re-queued, no restart counted)."""
    access.require_system_admin(user, "manage pools and nodes")
    with transaction.atomic():
        node = _set_state(node, NodeState.CORDONED, f"node {node.name} drained by {user}")
        evict_pods_on_node(node, reason=f"node {node.name} was drained", fault=False)
        request_cycle()
    return node


def node_mark_down(*, node: Node, reason: str, silent: bool = False) -> Node:
    """A node failed (missed heartbeats: `silent`, or an admin says so): its pods are
    evicted as a fault."""
    with transaction.atomic():
        node = _set_state(node, NodeState.DOWN, reason, silent=silent)
        evict_pods_on_node(node, reason=reason, fault=True)
        request_cycle()
    return node


def _set_by_executor(node: Node, state: str) -> bool:
    """Whether the node's last state change made it `state` and was its executor's (a
    liveness check, what Slurm said), not an admin's."""
    last = (
        SchedulingEvent.objects.filter(node=node, type=EventType.NODE_STATE)
        .order_by("-created_at", "-pk")
        .values_list("details", flat=True)
        .first()
    )
    return isinstance(last, dict) and last.get("state") == state and bool(last.get("silent"))


def node_mark_drained(*, node: Node, reason: str) -> Node:
    """A ready node's executor says it takes no new pods (Slurm drained it): cordoned,
    its pods kept. A node in any other state keeps it."""
    return _leave_ready(node, NodeState.CORDONED, reason)


def node_mark_unreachable(*, node: Node, reason: str) -> Node:
    """A ready node whose agent fell silent takes no new pods; its pods are kept (the
    agent may be back soon). A node in any other state keeps it."""
    return _leave_ready(node, NodeState.UNREACHABLE, reason)


def _leave_ready(node: Node, state: str, reason: str) -> Node:
    """A ready node goes to `state` without a person's say (its pods kept); a node in
    any other state keeps it."""
    with transaction.atomic():
        locked = Node.objects.select_for_update(no_key=True).get(pk=node.pk)
        if locked.state != NodeState.READY:
            return locked
        node = _set_state(locked, state, reason, silent=True)
        request_cycle()
    return node


def node_mark_reachable(*, node: Node, reason: str) -> Node:
    """An unreachable node's agent is back, or a node its executor marked down or
    drained is fine again: the node takes pods again. A node in any other state
    (cordoned by an admin, marked down by one) keeps it."""
    with transaction.atomic():
        locked = Node.objects.select_for_update(no_key=True).get(pk=node.pk)
        back = locked.state == NodeState.UNREACHABLE or (
            locked.state in (NodeState.DOWN, NodeState.CORDONED)
            and _set_by_executor(locked, locked.state)
        )
        if not back:
            return locked
        node = _set_state(locked, NodeState.READY, reason)
        request_cycle()
    return node
