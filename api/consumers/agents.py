"""The node agents' websocket, `/ws/agents/` (protocol version 1, docs/agent.md).

- The agent authenticates with its node credential, `Authorization: Bearer <node token>`.
  A wrong or revoked one: the connection is accepted, gets `error` (unauthorized) and is
  closed with 4401; a `hello` naming another node: `error` (forbidden), closed with 4403; a
  frame of another protocol version: `error` (version), closed with 4400.
- Each side numbers its frames from 1. Every frame the server sends carries `ack` (the last
  agent seq processed); a frame that needs no answer is acknowledged by an `ack` frame. A
  repeat (seq not above the last processed) is only acknowledged again; a gap or a malformed
  frame gets an `error` and the connection stays, so nothing already sent is lost.
- `hello` updates the node's facts, asks the lifecycle which runs to keep
  (runtime.executors.agent.reports.agent_hello) and is answered by `welcome`; then the connection
  joins the node's group (runtime.executors.agent.channel), whose `agent.send` messages go out as
  numbered frames. `run_state` goes to the lifecycle (reports.runs_reported); `log`,
  `usage` and `heartbeat` are stored by services.agents. Every frame counts as a sign of
  life.
- Frames are processed in order, by a task of the connection's own (`_read_inbox`): what
  the server sends the agent (`start`, `signal`) goes out at once, never behind the
  agent's frames waiting for the database. Valid `run_state` frames that arrive while the
  previous ones are being stored are stored together (one pass through the lifecycle, one
  reconcile, one `ack` for all), with the `ack` and `heartbeat` frames among them (an
  agent acknowledges each `start`: those acks no longer split a burst's reports into
  batches of one); any other frame waits until they are stored.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from fairway_agent import protocol
from redis.exceptions import RedisError

from scheduler_core.db.consumer_dispatch import DirectDispatch
from scheduler_core.models import Node, PodRun
from scheduler_core.runtime.executors.agent import reports
from scheduler_core.schemas.agents import BODIES, MAX_REASON, HelloIn, LogIn, RunStateIn, UsageIn
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.services import agents as services

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = 1.0  # seconds: frames closer together count as one sign of life
CHANNEL_RETRY = 1.0  # seconds between two tries to reach the channel layer
CREDENTIAL_RECHECK = 5.0  # seconds between two checks of a connection's credential
INBOX = 256  # frames taken in and not processed yet; more wait in the websocket
QUEUED_SIGNS = frozenset({"ack", "heartbeat"})  # frames queued with the reports
# What a channel layer raises when its Redis cannot be reached.
CHANNEL_LAYER_ERRORS: tuple[type[BaseException], ...] = (OSError, RedisError, asyncio.TimeoutError)


def bearer_token(scope: dict[str, Any]) -> str | None:
    """The credential of `Authorization: Bearer <token>`, if the handshake has one."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def _facts(body: HelloIn) -> services.NodeFacts:
    return services.NodeFacts(
        address=body.address or "",
        devices=[device.model_dump() for device in body.devices],
        cpu=body.cpu,
        memory_gib=body.memory_gib,
        agent_version=body.agent_version,
        capabilities=dict(body.capabilities or {}),
    )


def _hello(node: Node, body: HelloIn) -> dict[str, Any]:
    """Update the node, ask which runs it keeps; the welcome's body."""
    runs = [run.model_dump() for run in body.runs]
    node = services.node_update_facts(node=node, facts=_facts(body), max_epoch=body.max_epoch)
    services.record_heartbeat(node)
    keep = reports.agent_hello(node=node, runs=runs)
    reported = [run.run for run in body.runs]
    offsets = dict(
        PodRun.objects.filter(node=node, pk__in=[*keep, *reported]).values_list("pk", "log_size")
    )
    return {
        "node": node.name,
        "keep": keep,
        "log_offsets": {str(run): size for run, size in sorted(offsets.items())},
        **services.agent_timings(node),
    }


def _body(frame: dict[str, Any]) -> Any:
    """The frame's body checked against its schema (schemas.agents); ProtocolError naming
    the field that is wrong."""
    model = BODIES.get(frame["type"])
    if model is None:
        return None
    try:
        return validate(model, frame)
    except SchemaInvalid as exc:
        raise protocol.ProtocolError(protocol.ERR_MALFORMED, f"{frame['type']}: {exc}") from None


class AgentConsumer(DirectDispatch, AsyncWebsocketConsumer):
    """One node agent's connection (module docstring)."""

    node: Node | None = None
    in_group = False  # in the node's channel group (read before connect() runs)

    # Channels reads `channel_receive` for its dispatch loop after setting it: the layer's
    # own receive is wrapped so that a Redis outage pauses the node's channel instead of
    # ending the connection (its frames and heartbeats still reach the database).
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._patient_receive

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._layer_receive = receive

    async def _patient_receive(self) -> dict[str, Any]:
        while True:
            try:
                return await self._layer_receive()
            except CHANNEL_LAYER_ERRORS as exc:
                if self.in_group:
                    logger.warning("channel layer unavailable (%s): retrying", exc)
                self.in_group = False  # its group membership may be gone with Redis
                await asyncio.sleep(CHANNEL_RETRY)

    async def connect(self) -> None:
        self.sent_seq = 0  # frames this side sent
        self.processed = 0  # the last agent seq processed
        self.received = 0  # the last agent seq taken in (processed, or queued to be)
        # frames queued to be stored together: a run_state's report, or an ack's or a
        # heartbeat's type (QUEUED_SIGNS)
        self.pending: list[tuple[int, reports.RunState | str]] = []
        self.flusher: asyncio.Task[None] | None = None
        self.inbox: asyncio.Queue[str | bytes] = asyncio.Queue(INBOX)
        self.reader = asyncio.create_task(self._read_inbox())
        self.greeted = False
        self.last_alive = 0.0
        self.last_checked = time.monotonic()
        self.credential_id: int | None = None
        self.group: str | None = None
        self.in_group = False
        self.pace = FramePace(
            rate=float(settings.AGENT_MAX_FRAMES_PER_SECOND),
            burst=float(settings.AGENT_FRAME_BURST),
        )
        await self.accept()
        raw = bearer_token(self.scope)
        try:
            found = await database_sync_to_async(services.node_for_credential)(raw or "")
        except DatabaseError as exc:
            await self._unavailable(exc)
            return
        if found is None:
            await self._refuse(
                protocol.ERR_UNAUTHORIZED,
                "send a valid node credential: Authorization: Bearer <node token> "
                "(the credential is wrong or revoked: register the node again)",
                protocol.CLOSE_UNAUTHORIZED,
            )
            return
        self.node, self.credential_id = found

    async def disconnect(self, code: int) -> None:
        self.reader.cancel()
        if self.group is not None and self.in_group:
            with contextlib.suppress(*CHANNEL_LAYER_ERRORS):
                await self.channel_layer.group_discard(self.group, self.channel_name)

    # --- frames out -------------------------------------------------------------------------

    async def _send_frame(self, type: str, **body: Any) -> None:
        self.sent_seq += 1
        await self.send(text_data=protocol.encode(type, self.sent_seq, ack=self.processed, **body))

    async def _error(self, code: str, message: str) -> None:
        await self._send_frame("error", code=code, message=message)

    async def _refuse(self, code: str, message: str, close_code: int) -> None:
        await self._error(code, message)
        self.node = None
        await self.close(code=close_code)

    async def _unavailable(self, exc: Exception) -> None:
        """The database cannot be reached: the agent reconnects later and says again what
        it has (its hello), so nothing it reported is lost."""
        logger.warning("agent connection closed, the database is unavailable: %s", exc)
        await self._refuse(
            protocol.ERR_UNAVAILABLE,
            "the server cannot reach its database; connect again later",
            protocol.CLOSE_TRY_AGAIN,
        )

    # --- frames in ---------------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None):
        """Take a frame in (paced); `_read_inbox` processes it."""
        if self.node is None:
            return  # refused, closing
        await asyncio.sleep(self.pace.wait())
        await self.inbox.put(text_data if text_data is not None else bytes_data or b"")

    async def _read_inbox(self) -> None:
        """Process the frames taken in, one after the other, until the connection ends.
        A frame that breaks its handler ends the connection (1011), as a consumer's own
        error would."""
        while True:
            raw = await self.inbox.get()
            if self.node is None:
                continue  # refused, closing
            try:
                await self._process(raw)
            except Exception:
                logger.exception("agent connection closed: a frame could not be handled")
                self.node = None
                await self.close(code=1011)

    async def _process(self, raw: str | bytes) -> None:
        try:
            frame = protocol.decode(raw, sender="agent")
        except protocol.ProtocolError as exc:
            if exc.code == protocol.ERR_VERSION:
                await self._refuse(exc.code, exc.message, protocol.CLOSE_VERSION)
            else:
                await self._error(exc.code, exc.message)
            return
        seq = frame["seq"]
        if seq <= self.received:
            await self._flushed()
            await self._send_frame("ack")  # a repeat: already processed
            return
        if seq != self.received + 1:
            await self._error(
                protocol.ERR_OUT_OF_ORDER,
                f"expected seq {self.received + 1}, got {seq}: resend from {self.received + 1}",
            )
            return
        if not self.greeted and frame["type"] != "hello":
            await self._error(protocol.ERR_MALFORMED, "the first message must be hello")
            return
        try:
            if not await self._still_trusted():
                return
            self.received = seq
            if self._queued(frame):
                return
            await self._flushed()
            await self._handle(frame)
        except (protocol.ProtocolError, services.ReportRefused) as exc:
            if self.node is None:
                return
            self.processed = seq  # handled (refused): later frames are not a gap
            await self._error(exc.code, exc.message)
        except DatabaseError as exc:
            await self._unavailable(exc)

    async def _still_trusted(self) -> bool:
        """Check the credential again every CREDENTIAL_RECHECK seconds: a revoked or
        replaced credential, or a deleted node, ends the connection."""
        now = time.monotonic()
        if now - self.last_checked < CREDENTIAL_RECHECK:
            return True
        self.last_checked = now
        assert self.credential_id is not None
        valid = await database_sync_to_async(services.credential_is_valid)(self.credential_id)
        if not valid:
            await self._revoked()
        return valid

    async def _revoked(self) -> None:
        await self._refuse(
            protocol.ERR_UNAUTHORIZED,
            "this node's credential was revoked or replaced, or the node was deleted",
            protocol.CLOSE_UNAUTHORIZED,
        )

    async def _handle(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        node = self.node
        assert node is not None
        if kind == "run_state":
            await self._on_run_state(frame)  # checks its body itself: an exit is never lost
        else:
            body = _body(frame)
            if kind == "hello":
                await self._on_hello(body)
                return
            if kind == "error":
                logger.warning("agent of %s reports %s: %s", node.name, body.code, body.message)
            elif kind == "log":
                await self._on_log(body)
            elif kind == "usage":
                await self._on_usage(body)
        self.processed = frame["seq"]
        await self._alive()
        await self._send_frame("ack")

    async def _alive(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_alive >= HEARTBEAT_EVERY:
            self.last_alive = now
            assert self.node is not None
            if not await database_sync_to_async(services.record_heartbeat)(self.node):
                await self._revoked()
                return
            if not self.in_group and await self._join_group():
                # Starts and stops sent while it was out of the group were lost: the agent
                # connects again and its hello settles what it should run.
                await self._refuse(
                    protocol.ERR_UNAVAILABLE,
                    "the server's channel layer is back: connect again to catch up",
                    protocol.CLOSE_TRY_AGAIN,
                )

    async def _join_group(self) -> bool:
        """Join the node's group, through which the server sends starts and stops. While
        the channel layer (Redis) is down the connection lives without it (its heartbeats
        keep its runs), and tries again at every sign of life."""
        assert self.node is not None
        self.group = services.node_group(self.node.pk)
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except CHANNEL_LAYER_ERRORS as exc:
            logger.warning("node %s: cannot join its channel group (%s)", self.node.name, exc)
            return False
        self.in_group = True
        return True

    async def _on_hello(self, body: HelloIn) -> None:
        assert self.node is not None
        if body.node != self.node.name:
            await self._refuse(
                protocol.ERR_FORBIDDEN,
                f"this credential is node {self.node.name}'s, not {body.node!r}'s",
                protocol.CLOSE_FORBIDDEN,
            )
            return
        # Join the node's group first: what reconcile sends while the hello is handled waits
        # in the channel until the welcome is out (a consumer handles one message at a time).
        if not self.in_group:
            await self._join_group()
        try:
            welcome = await database_sync_to_async(_hello)(self.node, body)
        except ValidationError as exc:
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, "; ".join(exc.messages)) from None
        self.greeted = True
        self.last_alive = time.monotonic()
        self.processed = self.processed + 1
        await self._send_frame("welcome", **welcome)

    def _queued(self, frame: dict[str, Any]) -> bool:
        """Queue a valid `run_state` to be stored with those that arrive meanwhile, and an
        `ack` or `heartbeat` behind them: they store nothing of their own (a heartbeat
        only marks the node alive), so they never split a batch."""
        kind = frame["type"]
        if self.node is None:
            return False
        if kind in QUEUED_SIGNS:
            self.pending.append((frame["seq"], kind))
        elif kind == "run_state":
            try:
                body = validate(RunStateIn, frame)
                state = _run_state(body)
            except (SchemaInvalid, protocol.ProtocolError):
                return False  # handled on its own, with its error (_on_run_state)
            if body.state not in protocol.RUN_STATES:
                return False
            self.pending.append((frame["seq"], state))
        else:
            return False
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.create_task(self._flush_reports())
        return True

    async def _flushed(self) -> None:
        """Wait until every queued `run_state` is stored."""
        if self.flusher is not None:
            await self.flusher

    async def _flush_reports(self) -> None:
        """Store the queued reports, a batch at a time; then the frames up to the batch's
        last count as processed, and an `ack` says so (unless the batch held only acks)."""
        while self.pending and self.node is not None:
            batch, self.pending = self.pending, []
            states = [item for _, item in batch if isinstance(item, reports.RunState)]
            beat = any(item == "heartbeat" for _, item in batch)
            try:
                if states:
                    await database_sync_to_async(reports.runs_reported)(
                        node=self.node, states=states
                    )
                self.processed = batch[-1][0]
                await self._alive(force=beat)
            except DatabaseError as exc:
                self.pending = []
                await self._unavailable(exc)
                return
            if states or beat:
                await self._send_frame("ack")

    async def _on_run_state(self, frame: dict[str, Any]) -> None:
        body: RunStateIn | None
        problem: str | None = None
        try:
            body = validate(RunStateIn, frame)
        except SchemaInvalid as exc:
            body, problem = _salvaged(frame, exc), f"run_state: {exc}"
        if body is not None:
            if body.state not in protocol.RUN_STATES:
                raise protocol.ProtocolError(
                    protocol.ERR_MALFORMED, f"unknown run state {body.state!r}"
                )
            await database_sync_to_async(reports.runs_reported)(
                node=self.node, states=[_run_state(body)]
            )
        if problem is not None:
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, problem)

    async def _on_log(self, body: LogIn) -> None:
        try:
            chunk = base64.b64decode(body.data, validate=True)
        except (binascii.Error, ValueError):
            raise protocol.ProtocolError(
                protocol.ERR_MALFORMED, "data must be base64 text"
            ) from None
        await database_sync_to_async(services.record_log)(
            node=self.node, run_id=body.run, offset=body.offset, data=chunk
        )

    async def _on_usage(self, body: UsageIn) -> None:
        await database_sync_to_async(services.record_usage)(
            node=self.node,
            at=services.server_time(_time(body.at)),
            gpus=body.gpus,
            runs=body.runs,
        )

    # --- channel layer -> agent ----------------------------------------------------------------

    async def agent_send(self, message: dict[str, Any]) -> None:
        """A message for the agent (runtime.executors.agent.channel.send_many): send it."""
        if self.node is None:
            return
        await self._send_frame(message["frame_type"], **message.get("body", {}))

    async def agent_close(self, message: dict[str, Any]) -> None:
        """The node's credential was revoked or replaced, or the node deleted
        (services.agents.node_connections_close): this connection ends now."""
        if self.node is None:
            return
        await self._refuse(
            protocol.ERR_UNAUTHORIZED, message.get("reason", "credential revoked"),
            protocol.CLOSE_UNAUTHORIZED,
        )  # fmt: skip


def _run_state(body: RunStateIn) -> reports.RunState:
    return reports.RunState(
        run=body.run, epoch=body.epoch, state=body.state, exit_code=body.exit_code,
        signal=body.signal, reason=body.reason, at=services.server_time(_time(body.at)),
        ports=body.ports,
    )  # fmt: skip


def _time(value: str | None) -> datetime | None:
    """An ISO time an agent sent; ProtocolError when it is not one."""
    if value is None:
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:
        parsed = None
    if parsed is None:
        raise protocol.ProtocolError(protocol.ERR_MALFORMED, f"not an ISO time: {value!r}")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


def _salvaged(frame: dict[str, Any], exc: SchemaInvalid) -> RunStateIn | None:
    """What can be kept of a run_state with a bad field: a run that ended still ends (its
    workload must not stay `running` forever), without the values that were wrong."""
    try:
        kept = validate(
            RunStateIn, {"run": frame.get("run"), "epoch": frame.get("epoch"),
                         "state": frame.get("state")},
        )  # fmt: skip
    except SchemaInvalid:
        return None
    if kept.state not in (protocol.RUN_EXITED, protocol.RUN_START_FAILED):
        return None
    reason = f"the agent's report of how it ended was invalid ({exc})"
    return kept.model_copy(
        update={"state": protocol.RUN_START_FAILED, "reason": reason[:MAX_REASON]}
    )


class FramePace:
    """A token bucket: `rate` frames a second, `burst` at once. A frame over it waits (the
    agent's frames queue up behind it); nothing is dropped."""

    def __init__(self, *, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.at = burst, time.monotonic()

    def wait(self) -> float:
        """Seconds to wait before handling the next frame (0 within the rate)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate
