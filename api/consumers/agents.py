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
  numbered frames. `run_state` goes to the lifecycle (reports.run_reported); `log`,
  `usage` and `heartbeat` are stored by services.agents. Every frame counts as a sign of
  life.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from fairway_agent import protocol

from scheduler_core.models import Node, PodRun
from scheduler_core.runtime.executors.agent import reports
from scheduler_core.runtime.executors.agent.channel import node_group
from scheduler_core.services import agents as services

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = 1.0  # seconds: frames closer together count as one sign of life


def bearer_token(scope: dict[str, Any]) -> str | None:
    """The credential of `Authorization: Bearer <token>`, if the handshake has one."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def _integer(frame: dict[str, Any], field: str, *, minimum: int = 0) -> int:
    value = frame.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise protocol.ProtocolError(
            protocol.ERR_MALFORMED, f"{field} must be an integer >= {minimum}, got {value!r}"
        )
    return value


def _time(frame: dict[str, Any], field: str) -> datetime:
    value = frame.get(field)
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise protocol.ProtocolError(
            protocol.ERR_MALFORMED, f"{field} must be an ISO time, got {value!r}"
        )
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


def _facts(frame: dict[str, Any]) -> services.NodeFacts:
    return services.NodeFacts(
        address=frame.get("address") or "",
        devices=frame["devices"],
        cpu=frame["cpu"],
        memory_gib=frame["memory_gib"],
        agent_version=frame["agent_version"],
        capabilities=frame.get("capabilities") or {},
    )


def _hello(node: Node, frame: dict[str, Any]) -> dict[str, Any]:
    """Update the node, ask which runs it keeps; the welcome's body."""
    runs = frame["runs"]
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise protocol.ProtocolError(protocol.ERR_MALFORMED, "runs must be a list of objects")
    max_epoch = frame["max_epoch"]
    node = services.node_update_facts(
        node=node, facts=_facts(frame), max_epoch=max_epoch if isinstance(max_epoch, int) else 0
    )
    services.record_heartbeat(node)
    keep = reports.agent_hello(node=node, runs=runs)
    reported = [r["run"] for r in runs if isinstance(r.get("run"), int)]
    offsets = dict(
        PodRun.objects.filter(node=node, pk__in=[*keep, *reported]).values_list("pk", "log_size")
    )
    return {
        "node": node.name,
        "keep": keep,
        "log_offsets": {str(run): size for run, size in sorted(offsets.items())},
        **services.agent_timings(node),
    }


class AgentConsumer(AsyncWebsocketConsumer):
    """One node agent's connection (module docstring)."""

    node: Node | None = None

    async def connect(self) -> None:
        self.sent_seq = 0  # frames this side sent
        self.processed = 0  # the last agent seq processed
        self.greeted = False
        self.last_alive = 0.0
        self.group: str | None = None
        await self.accept()
        raw = bearer_token(self.scope)
        node = await database_sync_to_async(services.node_for_credential)(raw or "")
        if node is None:
            await self._refuse(
                protocol.ERR_UNAUTHORIZED,
                "send a valid node credential: Authorization: Bearer <node token> "
                "(the credential is wrong or revoked: register the node again)",
                protocol.CLOSE_UNAUTHORIZED,
            )
            return
        self.node = node

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    # --- frames out -------------------------------------------------------------------------

    async def _send_frame(self, type: str, **body: Any) -> None:
        self.sent_seq += 1
        await self.send(text_data=protocol.encode(type, self.sent_seq, ack=self.processed, **body))

    async def _error(self, code: str, message: str) -> None:
        await self._send_frame("error", code=code, message=message)

    async def _refuse(self, code: str, message: str, close_code: int) -> None:
        await self._error(code, message)
        await self.close(code=close_code)

    # --- frames in ---------------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None):
        if self.node is None:
            return  # refused, closing
        try:
            frame = protocol.decode(text_data if text_data is not None else bytes_data or b"",
                                    sender="agent")  # fmt: skip
        except protocol.ProtocolError as exc:
            if exc.code == protocol.ERR_VERSION:
                await self._refuse(exc.code, exc.message, protocol.CLOSE_VERSION)
            else:
                await self._error(exc.code, exc.message)
            return
        seq = frame["seq"]
        if seq <= self.processed:
            await self._send_frame("ack")  # a repeat: already processed
            return
        if seq != self.processed + 1:
            await self._error(
                protocol.ERR_OUT_OF_ORDER,
                f"expected seq {self.processed + 1}, got {seq}: resend from {self.processed + 1}",
            )
            return
        if not self.greeted and frame["type"] != "hello":
            await self._error(protocol.ERR_MALFORMED, "the first message must be hello")
            return
        try:
            await self._handle(frame)
        except (protocol.ProtocolError, services.ReportRefused) as exc:
            if self.node is None:
                return
            self.processed = seq  # handled (refused): later frames are not a gap
            await self._error(exc.code, exc.message)

    async def _handle(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        node = self.node
        assert node is not None
        if kind == "hello":
            await self._on_hello(frame)
            return
        if kind == "ack":
            self.processed = frame["seq"]
            return
        if kind == "error":
            logger.warning("agent of %s reports %s: %s", node.name, frame["code"], frame["message"])
        elif kind == "run_state":
            await self._on_run_state(frame)
        elif kind == "log":
            await self._on_log(frame)
        elif kind == "usage":
            await self._on_usage(frame)
        self.processed = frame["seq"]
        await self._alive(force=kind == "heartbeat")
        await self._send_frame("ack")

    async def _alive(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_alive >= HEARTBEAT_EVERY:
            self.last_alive = now
            assert self.node is not None
            await database_sync_to_async(services.record_heartbeat)(self.node)

    async def _on_hello(self, frame: dict[str, Any]) -> None:
        assert self.node is not None
        if frame["node"] != self.node.name:
            await self._refuse(
                protocol.ERR_FORBIDDEN,
                f"this credential is node {self.node.name}'s, not {frame['node']!r}'s",
                protocol.CLOSE_FORBIDDEN,
            )
            self.node = None
            return
        # Join the node's group first: what reconcile sends while the hello is handled waits
        # in the channel until the welcome is out (a consumer handles one message at a time).
        if self.group is None:
            self.group = node_group(self.node.pk)
            await self.channel_layer.group_add(self.group, self.channel_name)
        try:
            welcome = await database_sync_to_async(_hello)(self.node, frame)
        except ValidationError as exc:
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, "; ".join(exc.messages)) from None
        self.greeted = True
        self.last_alive = time.monotonic()
        self.processed = frame["seq"]
        await self._send_frame("welcome", **welcome)

    async def _on_run_state(self, frame: dict[str, Any]) -> None:
        state = frame["state"]
        if state not in protocol.RUN_STATES:
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, f"unknown run state {state!r}")
        exit_code = frame.get("exit_code")
        if exit_code is not None and (
            not isinstance(exit_code, int) or isinstance(exit_code, bool)
        ):
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, "exit_code must be an integer")
        await database_sync_to_async(reports.run_reported)(
            node=self.node,
            run_id=_integer(frame, "run", minimum=1),
            epoch=_integer(frame, "epoch"),
            state=state,
            exit_code=exit_code,
            signal=frame.get("signal"),
            reason=frame.get("reason"),
            at=_time(frame, "at") if frame.get("at") is not None else timezone.now(),
        )

    async def _on_log(self, frame: dict[str, Any]) -> None:
        data = frame["data"]
        try:
            chunk = base64.b64decode(data, validate=True) if isinstance(data, str) else None
        except (binascii.Error, ValueError):
            chunk = None
        if chunk is None:
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, "data must be base64 text")
        await database_sync_to_async(services.record_log)(
            node=self.node,
            run_id=_integer(frame, "run", minimum=1),
            offset=_integer(frame, "offset"),
            data=chunk,
        )

    async def _on_usage(self, frame: dict[str, Any]) -> None:
        gpus, runs = frame["gpus"], frame["runs"]
        if not isinstance(gpus, list) or not isinstance(runs, list):
            raise protocol.ProtocolError(protocol.ERR_MALFORMED, "gpus and runs must be lists")
        await database_sync_to_async(services.record_usage)(
            node=self.node, at=_time(frame, "at"), gpus=gpus, runs=runs
        )

    # --- channel layer -> agent ----------------------------------------------------------------

    async def agent_send(self, message: dict[str, Any]) -> None:
        """A message for the agent (runtime.executors.agent.channel.send_now): send it."""
        if self.node is None:
            return
        await self._send_frame(message["frame_type"], **message.get("body", {}))
