"""Node agents (docs/agent.md): join tokens, registration, node credentials, and what a
connected agent reports (logs, usage, heartbeats). The `/ws/agents/` consumer and the
registration endpoint only translate frames and requests into these calls."""

from __future__ import annotations

import logging
import secrets
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
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
from scheduler_core.schemas.agents import GpuUsage, NodeFactsIn, RunUsage
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.services.cluster import node_mark_reachable
from scheduler_core.services.errors import (
    Conflict,
    FieldErrors,
    check_slug_name,
)

JOIN_TOKEN_PREFIX = "fwj_"
NODE_TOKEN_PREFIX = "fwn_"
LAST_USED_RESOLUTION = timedelta(minutes=1)
PRUNE_EVERY = 60.0  # seconds between two deletions of old usage samples (per process)
LOG_MESSAGE = "workload.log"  # channel layer type of a live log chunk (console consumer)
MIN_FENCE_AFTER = 10
CLOSE_MESSAGE = "agent.close"  # channel layer type: the consumer closes (AgentConsumer.agent_close)

logger = logging.getLogger(__name__)


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
    *,
    pool: NodePool,
    by,
    description: str = "",
    expires_at: datetime | None = None,
    single_use: bool = False,
) -> tuple[JoinToken, str]:
    """A token that lets agents register nodes in `pool` until `expires_at` (default:
    JOIN_TOKEN_TTL seconds from now), once only when `single_use`; the raw token is returned
    once. `by` None: the operator at the server's shell (manage.py agent_token)."""
    if by is not None:
        access.require_system_admin(by, "create join tokens")
    errors = FieldErrors()
    if expires_at is None:
        expires_at = timezone.now() + timedelta(seconds=float(settings.JOIN_TOKEN_TTL))
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
        single_use=single_use,
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
    """`active`, `expired`, `used` (a single-use token that registered a node) or
    `revoked`."""
    if token.revoked_at is not None:
        return "used" if token.single_use and token.revoked_at == token.last_used_at else "revoked"
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


def _check_facts(errors: FieldErrors, facts: NodeFacts) -> None:
    """The facts against the one schema of what an agent says about its machine
    (schemas.agents.NodeFactsIn): finite numbers within range, at most MAX_DEVICES GPUs."""
    try:
        validate(NodeFactsIn, facts.__dict__)
    except SchemaInvalid as exc:
        for field, messages in exc.by_field().items():
            for message in messages:
                errors.add(field, message)


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
    node_token: str = "",
) -> tuple[Node, str]:
    """Create the node `hostname` in the join token's pool (or update the pool's node of that
    name) and give it a new credential, returned raw once; the old one stops working and its
    connections are closed. Taking over a node that has a valid credential needs that
    credential (`node_token`); without one an admin revokes it first (node_credential_revoke).
    A single-use join token is used up."""
    facts = NodeFacts(address, devices, cpu, memory_gib, agent_version, capabilities or {})
    errors = FieldErrors()
    check_slug_name(errors, hostname)
    if errors.errors:  # say which field: the agent sends its host name
        errors.errors["hostname"] = errors.errors.pop("name")
    _check_facts(errors, facts)
    errors.raise_if_any()
    with transaction.atomic():
        token = _usable_join_token(join_token)
        node = Node.objects.select_for_update(no_key=True).filter(name=hostname).first()
        if node is not None and node.pool_id != token.pool_id:
            raise Conflict(
                {"hostname": f"a node named {hostname!r} exists in another pool ({node.pool})"}
            )
        if node is None:
            node = Node(pool=token.pool, name=hostname)
        else:
            _check_takeover(node, node_token)
        _apply_facts(node, facts)
        node.last_heartbeat = timezone.now()
        node.save()
        raw = _raw(NODE_TOKEN_PREFIX)
        if NodeCredential.objects.filter(node=node).delete()[0]:
            node_connections_close(node.pk, f"node {node.name} registered again")
        NodeCredential.objects.create(node=node, key_hash=hash_token(raw), prefix=raw[:12])
        token.last_used_at = timezone.now()
        if token.single_use:
            token.revoked_at = token.last_used_at  # used up
        token.save(update_fields=["last_used_at", "revoked_at"])
        request_cycle()
    node.pool = token.pool
    return node, raw


def _check_takeover(node: Node, node_token: str) -> None:
    """A join token alone may register a node of an existing name only when that node has
    no valid credential (never registered, or an admin revoked it): else it must present
    the node's own credential, so a join token cannot steal a node's identity."""
    current = NodeCredential.objects.filter(node=node, revoked_at__isnull=True).first()
    if current is None or (node_token and hash_token(node_token) == current.key_hash):
        return
    raise Conflict(
        {
            "hostname": f"node {node.name!r} is registered: present its credential "
            "(node_token), or ask an admin to revoke it first"
        }
    )


def node_update_facts(*, node: Node, facts: NodeFacts, max_epoch: int = 0) -> Node:
    """What the agent says in its hello: devices, CPU, memory, address, version. The node's
    epoch counter never falls below what the agent has seen (an epoch is never reused)."""
    errors = FieldErrors()
    _check_facts(errors, facts)
    errors.raise_if_any()
    with transaction.atomic():
        node = Node.objects.select_for_update(no_key=True).select_related("pool").get(pk=node.pk)
        before = (node.gpu_count, node.cpu, node.memory, dict(node.labels or {}))
        _apply_facts(node, facts)
        if isinstance(max_epoch, int) and max_epoch > node.last_epoch:
            node.last_epoch = max_epoch
        node.save()
        if before != (node.gpu_count, node.cpu, node.memory, node.labels):
            request_cycle()
    return node


# --- credentials ------------------------------------------------------------------------------


def node_for_credential(raw: str) -> tuple[Node, int] | None:
    """The node whose agent presents `raw` and the credential's id, or None (unknown or
    revoked credential)."""
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
    return credential.node, credential.pk


def credential_is_valid(credential_id: int) -> bool:
    """Whether an open connection's credential still stands (not revoked, not replaced by
    a new registration, its node not deleted)."""
    return NodeCredential.objects.filter(pk=credential_id, revoked_at__isnull=True).exists()


def node_credential_revoke(*, node: Node, by=None) -> bool:
    """The node's agent is refused from now on, its open connections closed (until it
    registers again with a join token); False when it had no valid credential. `by` None:
    the operator at the server's shell (manage.py agent_revoke)."""
    if by is not None:
        access.require_system_admin(by, "revoke node credentials")
    with transaction.atomic():
        revoked = NodeCredential.objects.filter(node=node, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        node_connections_close(node.pk, f"node {node.name}'s credential was revoked")
    return bool(revoked)


def node_group(node_id: int) -> str:
    """The channel layer group of node `node_id`'s agent connections: the consumer joins
    it; starts and stops (runtime.executors.agent.channel) and closes go through it."""
    return f"agents.node.{node_id}"


def node_connections_close(node_id: int, reason: str) -> None:
    """Close the node's open agent connections once the current transaction commits (its
    credential was revoked or replaced, or it was deleted). Connections this misses (the
    channel layer is down) find out at their next credential check."""

    def close() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(
                node_group(node_id), {"type": CLOSE_MESSAGE, "reason": reason}
            )
        except Exception:  # a failure here never breaks the write; the re-check catches up
            logger.warning("could not close node %s's connections now", node_id, exc_info=True)

    transaction.on_commit(close)


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
        runs = runs.select_for_update(no_key=True)
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
        kept = _within_log_cap(stored, new)
        # past the cut, the count follows the agent's bytes (its offsets stay right)
        run.log_size = max(stored + len(new), stored + len(kept))
        new = kept
        if new:
            LogChunk.objects.create(run=run, offset=stored, data=new)
        run.save(update_fields=["log_size"])
        if not new:
            return run.log_size
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


def log_cap() -> int:
    """Bytes of one run's output the server stores (AGENT_LOG_MAX_BYTES)."""
    return int(settings.AGENT_LOG_MAX_BYTES)


def _within_log_cap(stored: int, new: bytes) -> bytes:
    """The part of `new` (bytes from `stored` on) that is kept: up to the cap, then one
    line saying where the log was cut; nothing after it. The run's byte count still moves
    on, so the agent's offsets stay right."""
    cap = log_cap()
    if stored > cap:
        return b""
    if stored + len(new) <= cap:
        return new
    note = (
        f"\n[fairway: the log is cut here, at {cap} bytes (AGENT_LOG_MAX_BYTES); "
        "the rest of this run's output is not stored]\n"
    )
    return new[: cap - stored] + note.encode()


def server_time(at: datetime | None) -> datetime:
    """An agent's time as the server stores it: never after the server's clock, never
    before AGENT_USAGE_RETENTION ago (a node's clock, or its claims, may be off)."""
    now = timezone.now()
    if at is None:
        return now
    oldest = now - timedelta(seconds=float(settings.AGENT_USAGE_RETENTION))
    return min(max(at, oldest), now)


_last_prune = 0.0


def record_usage(
    *, node: Node, at: datetime, gpus: Sequence[GpuUsage], runs: Sequence[RunUsage]
) -> None:
    """Store one usage report (checked by schemas.agents.UsageIn): a sample per GPU and per
    run of the node, dated by the server's clock at the latest (server_time). Samples older
    than AGENT_USAGE_RETENTION seconds are deleted (at most once a minute per process)."""
    at = server_time(at)
    by_run = {r.run: r for r in runs}
    known = set(PodRun.objects.filter(node=node, pk__in=by_run).values_list("pk", flat=True))
    with transaction.atomic():
        GpuSample.objects.bulk_create(
            GpuSample(
                node=node, index=g.index, at=at, utilization=g.utilization,
                memory_used_mib=g.memory_used_mib, memory_total_mib=g.memory_total_mib,
            )
            for g in gpus
        )  # fmt: skip
        RunUsageSample.objects.bulk_create(
            RunUsageSample(run_id=r.run, at=at, cpu_percent=r.cpu_percent, rss_mib=r.rss_mib)
            for r in by_run.values()
            if r.run in known
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


def record_heartbeat(node: Node) -> bool:
    """The node's agent is alive: a node that was unreachable, or down because it fell
    silent, is ready again. False when the node no longer exists (deleted)."""
    if not Node.objects.filter(pk=node.pk).update(last_heartbeat=timezone.now()):
        return False
    if Node.objects.filter(pk=node.pk, state__in=(NodeState.UNREACHABLE, NodeState.DOWN)).exists():
        node_mark_reachable(node=node, reason=f"node {node.name}'s agent is back")
    return True
