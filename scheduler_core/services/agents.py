"""Node agents (docs/agent.md): join tokens, registration, node credentials, and what a
connected agent reports (logs, usage, heartbeats). The `/ws/agents/` consumer and the
registration endpoint only translate frames and requests into these calls."""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from fairway_agent import protocol

from scheduler_core import access
from scheduler_core.choices import NodeState
from scheduler_core.live_events.recording import group_name, send_after_commit
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import (
    GpuSample,
    JoinToken,
    LogChunk,
    Node,
    NodeCredential,
    NodePool,
    PodRun,
    RunUsageSample,
)
from scheduler_core.models.accounts import hash_token
from scheduler_core.services.cluster import node_mark_reachable
from scheduler_core.services.errors import (
    Conflict,
    FieldErrors,
    check_slug_name,
    require_non_negative,
)

JOIN_TOKEN_PREFIX = "fwj_"
NODE_TOKEN_PREFIX = "fwn_"
LAST_USED_RESOLUTION = timedelta(minutes=1)
PRUNE_EVERY = 60.0  # seconds between two deletions of old usage samples (per process)
LOG_MESSAGE = "workload.log"  # channel layer type of a live log chunk (console consumer)
MIN_FENCE_AFTER = 10


class JoinTokenInvalid(Exception):
    """A registration's join token is wrong, expired or revoked (the API answers 401)."""


class ReportRefused(Exception):
    """An agent's report that cannot be stored; `code` is a protocol error code, and the
    consumer answers with an error frame (the connection stays)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _raw(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


# --- join tokens ----------------------------------------------------------------------------


def join_token_create(
    *, pool: NodePool, by, description: str = "", expires_at: datetime | None = None
) -> tuple[JoinToken, str]:
    """A token that lets agents register nodes in `pool`; the raw token is returned once.
    `by` None: the operator at the server's shell (manage.py agent_token)."""
    if by is not None:
        access.require_system_admin(by, "create join tokens")
    errors = FieldErrors()
    description = (description or "").strip()
    if len(description) > 255:
        errors.add("description", "at most 255 characters")
    if expires_at is not None and expires_at <= timezone.now():
        errors.add("expires_at", "must be in the future")
    errors.raise_if_any()
    raw = _raw(JOIN_TOKEN_PREFIX)
    token = JoinToken.objects.create(
        pool=pool,
        description=description,
        key_hash=hash_token(raw),
        prefix=raw[:12],
        created_by=by,
        expires_at=expires_at,
    )
    return token, raw


def join_token_revoke(*, token: JoinToken, by) -> JoinToken:
    """Refuse the token from now on (nodes it registered keep their credentials)."""
    if by is not None:
        access.require_system_admin(by, "revoke join tokens")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def join_token_state(token: JoinToken, now: datetime | None = None) -> str:
    """`active`, `expired` or `revoked`."""
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= (now or timezone.now()):
        return "expired"
    return "active"


def _usable_join_token(raw: str) -> JoinToken:
    if not isinstance(raw, str) or not raw.startswith(JOIN_TOKEN_PREFIX):
        raise JoinTokenInvalid(f"not a join token (they start with {JOIN_TOKEN_PREFIX!r})")
    token = (
        JoinToken.objects.select_for_update()
        .select_related("pool")
        .filter(key_hash=hash_token(raw))
        .first()
    )
    if token is None:
        raise JoinTokenInvalid("unknown join token")
    state = join_token_state(token)
    if state != "active":
        raise JoinTokenInvalid(f"this join token is {state}: ask an admin for a new one")
    return token


def agent_command_line(*, server: str, join_token: str) -> str:
    """What to run on a node to register it with the token."""
    return f"fairway-agent --server {server.rstrip('/')} --join-token {join_token}"


# --- registration and node facts -------------------------------------------------------------


@dataclass(frozen=True)
class NodeFacts:
    """What an agent says about its machine (registration and every hello)."""

    address: str
    devices: list[dict[str, Any]]
    cpu: float
    memory_gib: float
    agent_version: str
    capabilities: dict[str, Any]


def check_devices(errors: FieldErrors, devices: Any) -> None:
    """Devices are `[{index, uuid, model, memory_mib}]` with distinct indices."""
    if not isinstance(devices, list):
        errors.add("devices", "must be a list of GPUs")
        return
    seen: set[int] = set()
    for i, device in enumerate(devices):
        index = device.get("index") if isinstance(device, dict) else None
        if (
            not isinstance(device, dict)
            or not isinstance(index, int)
            or isinstance(index, bool)
            or index < 0
            or not isinstance(device.get("model", ""), str)
            or not isinstance(device.get("uuid", ""), str)
        ):
            errors.add(f"devices[{i}]", "a GPU is {index: int >= 0, uuid, model, memory_mib}")
        elif index in seen:
            errors.add(f"devices[{i}]", f"GPU index {index} is listed twice")
        else:
            seen.add(index)


def _check_facts(errors: FieldErrors, facts: NodeFacts) -> None:
    check_devices(errors, facts.devices)
    require_non_negative(errors, "cpu", facts.cpu)
    require_non_negative(errors, "memory_gib", facts.memory_gib)
    if not isinstance(facts.capabilities, dict):
        errors.add("capabilities", "must be an object")
    if not isinstance(facts.address, str) or len(facts.address) > 255:
        errors.add("address", "a host name or address (at most 255 characters)")
    if not isinstance(facts.agent_version, str) or len(facts.agent_version) > 32:
        errors.add("agent_version", "at most 32 characters")


def _apply_facts(node: Node, facts: NodeFacts) -> None:
    models = Counter(str(d.get("model", "")) for d in facts.devices)
    node.devices = facts.devices
    node.gpu_count = len(facts.devices)
    node.gpu_model = models.most_common(1)[0][0][:64] if models else ""
    node.cpu = facts.cpu
    node.memory = facts.memory_gib
    node.address = facts.address
    node.agent_version = facts.agent_version
    node.capabilities = facts.capabilities
    node.labels = {
        **(node.labels or {}),
        "containers": "true" if facts.capabilities.get("containers") else "false",
    }


def agent_register(
    *,
    join_token: str,
    hostname: str,
    address: str,
    devices: list[dict[str, Any]],
    cpu: float,
    memory_gib: float,
    agent_version: str,
    capabilities: dict[str, Any] | None = None,
) -> tuple[Node, str]:
    """Create the node `hostname` in the join token's pool (or update the pool's node of that
    name) and give it a new credential, returned raw once; the old one stops working."""
    facts = NodeFacts(address, devices, cpu, memory_gib, agent_version, capabilities or {})
    errors = FieldErrors()
    check_slug_name(errors, hostname)
    if errors.errors:  # say which field: the agent sends its host name
        errors.errors["hostname"] = errors.errors.pop("name")
    _check_facts(errors, facts)
    errors.raise_if_any()
    with transaction.atomic():
        token = _usable_join_token(join_token)
        node = Node.objects.select_for_update().filter(name=hostname).first()
        if node is not None and node.pool_id != token.pool_id:
            raise Conflict(
                {"hostname": f"a node named {hostname!r} exists in another pool ({node.pool})"}
            )
        if node is None:
            node = Node(pool=token.pool, name=hostname)
        _apply_facts(node, facts)
        node.last_heartbeat = timezone.now()
        node.save()
        raw = _raw(NODE_TOKEN_PREFIX)
        NodeCredential.objects.filter(node=node).delete()
        NodeCredential.objects.create(node=node, key_hash=hash_token(raw), prefix=raw[:12])
        token.last_used_at = timezone.now()
        token.save(update_fields=["last_used_at"])
        request_cycle()
    node.pool = token.pool
    return node, raw


def node_update_facts(*, node: Node, facts: NodeFacts, max_epoch: int = 0) -> Node:
    """What the agent says in its hello: devices, CPU, memory, address, version. The node's
    epoch counter never falls below what the agent has seen (an epoch is never reused)."""
    errors = FieldErrors()
    _check_facts(errors, facts)
    errors.raise_if_any()
    with transaction.atomic():
        node = Node.objects.select_for_update().select_related("pool").get(pk=node.pk)
        before = (node.gpu_count, node.cpu, node.memory, dict(node.labels or {}))
        _apply_facts(node, facts)
        if isinstance(max_epoch, int) and max_epoch > node.last_epoch:
            node.last_epoch = max_epoch
        node.save()
        if before != (node.gpu_count, node.cpu, node.memory, node.labels):
            request_cycle()
    return node


# --- credentials ------------------------------------------------------------------------------


def node_for_credential(raw: str) -> Node | None:
    """The node whose agent presents `raw`, or None (unknown or revoked credential)."""
    if not isinstance(raw, str) or not raw.startswith(NODE_TOKEN_PREFIX):
        return None
    credential = (
        NodeCredential.objects.select_related("node__pool")
        .filter(key_hash=hash_token(raw), revoked_at__isnull=True)
        .first()
    )
    if credential is None:
        return None
    now = timezone.now()
    if credential.last_used_at is None or now - credential.last_used_at >= LAST_USED_RESOLUTION:
        NodeCredential.objects.filter(pk=credential.pk).update(last_used_at=now)
    return credential.node


def node_credential_revoke(node: Node) -> None:
    """The node's agent is refused from now on (until it registers again with a join token)."""
    NodeCredential.objects.filter(node=node, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


# --- reports ---------------------------------------------------------------------------------


def agent_timings(node: Node) -> dict[str, float]:
    """The intervals a node's agent keeps (its welcome). A run fences itself `fence_after`
    seconds after losing the server, then needs up to its grace period to stop: the server
    marks the node lost only after `lost_after`, past both."""
    lost_after = float(settings.AGENT_LOST_AFTER)
    grace = float(node.pool.grace_period)
    return {
        "heartbeat_interval": float(settings.AGENT_HEARTBEAT_INTERVAL),
        "usage_interval": float(settings.AGENT_USAGE_INTERVAL),
        "lost_after": lost_after,
        "fence_after": max(float(MIN_FENCE_AFTER), lost_after - 2 * grace - 5),
    }


def _node_run(node: Node, run_id: Any, *, lock: bool = False) -> PodRun:
    if not isinstance(run_id, int) or isinstance(run_id, bool):
        raise ReportRefused(protocol.ERR_MALFORMED, f"run must be an integer, got {run_id!r}")
    runs = PodRun.objects.select_related("workload")
    if lock:
        runs = runs.select_for_update()
    run = runs.filter(pk=run_id, node=node).first()
    if run is None:
        raise ReportRefused(protocol.ERR_UNKNOWN_RUN, f"no run {run_id} on node {node.name}")
    return run


def record_log(*, node: Node, run_id: int, offset: int, data: bytes) -> int:
    """Store a chunk of a run's output starting at byte `offset`; returns the bytes stored
    for the run. Only bytes beyond those stored are kept (a resend after a reconnect neither
    loses nor duplicates); a chunk past the stored end is refused (bytes would be missing).
    New bytes go live to the workload's watchers."""
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ReportRefused(protocol.ERR_MALFORMED, f"offset must be >= 0, got {offset!r}")
    with transaction.atomic():
        run = _node_run(node, run_id, lock=True)
        stored = run.log_size
        if offset > stored:
            raise ReportRefused(
                protocol.ERR_OUT_OF_ORDER,
                f"log of run {run.pk} is stored up to byte {stored}; this chunk starts at "
                f"{offset}: resend from {stored}",
            )
        new = data[stored - offset :]
        if not new:
            return stored
        LogChunk.objects.create(run=run, offset=stored, data=new)
        run.log_size = stored + len(new)
        run.save(update_fields=["log_size"])
        group = group_name("workload", run.workload_id)
        send_after_commit(
            [
                (
                    group,
                    {
                        "type": LOG_MESSAGE,
                        "group": group,
                        "log": {
                            "workload": run.workload_id,
                            "pod": run.pod,
                            "run": run.pk,
                            "offset": stored,
                            "next_offset": stored + len(new),
                            "text": new.decode("utf-8", errors="replace"),
                        },
                    },
                )
            ]
        )
    return run.log_size


def _number(value: Any, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ReportRefused(protocol.ERR_MALFORMED, f"{what} must be a number, got {value!r}")
    return float(value)


_last_prune = 0.0


def record_usage(
    *, node: Node, at: datetime, gpus: Sequence[dict[str, Any]], runs: Sequence[dict[str, Any]]
) -> None:
    """Store one usage report: a sample per GPU and per run of the node. Samples older than
    AGENT_USAGE_RETENTION seconds are deleted (at most once a minute per process)."""
    try:
        gpu_rows = [
            GpuSample(
                node=node,
                index=int(_number(g["index"], "gpus[].index")),
                at=at,
                utilization=_number(g.get("utilization", 0), "gpus[].utilization"),
                memory_used_mib=_number(g.get("memory_used_mib", 0), "gpus[].memory_used_mib"),
                memory_total_mib=_number(g.get("memory_total_mib", 0), "gpus[].memory_total_mib"),
            )
            for g in gpus
        ]
        by_run = {
            int(_number(r["run"], "runs[].run")): (
                _number(r.get("cpu_percent", 0), "runs[].cpu_percent"),
                _number(r.get("rss_mib", 0), "runs[].rss_mib"),
            )
            for r in runs
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise ReportRefused(protocol.ERR_MALFORMED, f"usage: bad entry ({exc!r})") from None
    known = set(PodRun.objects.filter(node=node, pk__in=by_run).values_list("pk", flat=True))
    with transaction.atomic():
        GpuSample.objects.bulk_create(gpu_rows)
        RunUsageSample.objects.bulk_create(
            RunUsageSample(run_id=run_id, at=at, cpu_percent=cpu, rss_mib=rss)
            for run_id, (cpu, rss) in by_run.items()
            if run_id in known
        )
    _prune_usage()


def _prune_usage() -> None:
    global _last_prune
    now = time.monotonic()
    if now - _last_prune < PRUNE_EVERY:
        return
    _last_prune = now
    cutoff = timezone.now() - timedelta(seconds=float(settings.AGENT_USAGE_RETENTION))
    GpuSample.objects.filter(at__lt=cutoff).delete()
    RunUsageSample.objects.filter(at__lt=cutoff).delete()


def record_heartbeat(node: Node) -> None:
    """The node's agent is alive: a node that was unreachable, or down because it fell
    silent, is ready again."""
    Node.objects.filter(pk=node.pk).update(last_heartbeat=timezone.now())
    if Node.objects.filter(pk=node.pk, state__in=(NodeState.UNREACHABLE, NodeState.DOWN)).exists():
        node_mark_reachable(node=node, reason=f"node {node.name}'s agent is back")
