"""The websocket session with the server (`/ws/agents/`, protocol version 1, docs/agent.md).

One `AgentClient` keeps the node connected: hello -> welcome, then it starts and stops runs
as told, reports every run state change, streams logs (base64 chunks of at most 64 KiB,
`offset` = bytes sent before the chunk), usage and heartbeats, and touches the lease file
while connected (a shim fences its run when the lease goes stale). It reconnects with a
capped, jittered backoff; a rejected credential (close code 4401/4403) or a protocol version
the server does not speak (4400) ends it with `CredentialRejected` / `VersionRejected`
instead of looping forever. A bad frame never ends the session: it is answered with `error`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from fairway_agent import __version__, protocol
from fairway_agent.discovery import Inventory
from fairway_agent.runs import RunManager, RunStatus
from fairway_agent.usage import GpuSampler, RunSampler, usage_message

log = logging.getLogger(__name__)

LOG_CHUNK = 64 * 1024
LOG_BURST = 16 * LOG_CHUNK  # per run per tick, so one chatty run cannot starve the others


class CredentialRejected(Exception):
    """The server rejected this node's credential: retrying cannot help."""


class VersionRejected(Exception):
    """The server does not speak this agent's protocol version."""


@dataclass
class ClientConfig:
    url: str
    node_token: str
    node: str
    address: str | None
    inventory: Inventory
    poll_interval: float = 0.2
    lease_interval: float = 1.0
    max_backoff: float = 5.0
    welcome_timeout: float = 30.0


@dataclass
class _Connection:
    """Numbering and bookkeeping of one connection (both restart at every connect)."""

    ws: ClientConnection
    seq: int = 0
    peer_seq: int = 0
    welcomed: asyncio.Event = field(default_factory=asyncio.Event)
    reported: dict[str, str] = field(default_factory=dict)  # run key -> state sent
    final_seq: dict[str, int] = field(default_factory=dict)  # seq that told its end
    sent_offsets: dict[str, int] = field(default_factory=dict)
    last_log_seq: dict[str, int] = field(default_factory=dict)

    async def send(self, kind: str, **body: Any) -> int:
        self.seq += 1
        ack = body.pop("ack", None) or (self.peer_seq or None)
        await self.ws.send(protocol.encode(kind, self.seq, ack=ack, **body))
        return self.seq


class AgentClient:
    """Keeps this node connected to the server and does what it says."""

    def __init__(
        self,
        config: ClientConfig,
        runs: RunManager,
        gpu_sampler: GpuSampler,
        *,
        connector: Callable[..., Any] = connect,
    ) -> None:
        self.config = config
        self.runs = runs
        self.gpu_sampler = gpu_sampler
        self.run_sampler = RunSampler()
        self.connector = connector
        self.heartbeat_interval = 5.0
        self.usage_interval = 10.0

    # ---- connecting -----------------------------------------------------------------

    async def run_forever(self) -> None:
        """Connect, and reconnect after every loss, until the credential is rejected."""
        attempt = 0
        while True:
            welcomed = False
            try:
                async with self.connector(
                    self.config.url,
                    additional_headers={"Authorization": f"Bearer {self.config.node_token}"},
                    open_timeout=10,
                ) as ws:
                    log.info("connected to %s", self.config.url)
                    with contextlib.suppress(ConnectionClosed):
                        welcomed = await self._session(ws)
                    _raise_if_fatal(ws.close_code, ws.close_reason)
                    log.warning("connection closed (%s %s)", ws.close_code, ws.close_reason or "")
            except InvalidStatus as exc:
                if exc.response.status_code in (401, 403):
                    raise CredentialRejected(
                        f"the server refused this node's credential (HTTP "
                        f"{exc.response.status_code})"
                    ) from None
                log.warning("connection refused: %s", exc)
            except (OSError, TimeoutError, WebSocketException) as exc:
                log.warning("connection to %s lost: %s", self.config.url, exc or type(exc))
            attempt = 0 if welcomed else attempt + 1
            delay = min(self.config.max_backoff, 0.25 * 2**attempt) * random.uniform(0.5, 1.0)
            log.info("reconnecting in %.1fs", delay)
            await asyncio.sleep(delay)

    async def _session(self, ws: ClientConnection) -> bool:
        """One connection, from hello to its close; whether a welcome came."""
        conn = _Connection(ws)
        await self._send_hello(conn)
        receiver = asyncio.create_task(self._receive(conn))
        try:
            welcome_wait = asyncio.create_task(conn.welcomed.wait())
            done, _ = await asyncio.wait(
                {receiver, welcome_wait},
                timeout=self.config.welcome_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
            welcome_wait.cancel()
            if not conn.welcomed.is_set():
                if receiver not in done:
                    log.warning("no welcome within %ss", self.config.welcome_timeout)
                    await ws.close()
                await _finish(receiver)
                return False
            workers = [
                receiver,
                asyncio.create_task(self._pump(conn)),
                asyncio.create_task(
                    self._every(lambda: self.heartbeat_interval, conn, "heartbeat")
                ),
                asyncio.create_task(self._every(lambda: self.usage_interval, conn, "usage")),
            ]
            _, pending = await asyncio.wait(workers, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            for task in workers:
                await _finish(task)
            return True
        finally:
            receiver.cancel()

    async def _send_hello(self, conn: _Connection) -> None:
        self.runs.poll()
        runs = []
        for status in self.runs.statuses():
            key = str(status.run)
            runs.append(
                {
                    "run": status.run,
                    "epoch": status.epoch,
                    "state": status.state,
                    "exit_code": status.exit_code,
                    "signal": status.signal,
                    "log_size": self.runs.log_size(key),
                }
            )
            conn.reported[key] = status.state
        inventory = self.config.inventory
        seq = await conn.send(
            "hello",
            node=self.config.node,
            agent_version=__version__,
            address=self.config.address,
            devices=inventory.devices,
            capabilities=self.runs.capabilities,
            cpu=inventory.cpu,
            memory_gib=inventory.memory_gib,
            max_epoch=self.runs.max_epoch,
            runs=runs,
        )
        for status in self.runs.statuses():
            if status.terminal:
                conn.final_seq[str(status.run)] = seq

    # ---- receiving ------------------------------------------------------------------

    async def _receive(self, conn: _Connection) -> None:
        async for text in conn.ws:
            await self.handle_frame(conn, text)

    async def handle_frame(self, conn: _Connection, text: str | bytes) -> None:
        """Process one frame from the server; never raises for a bad one."""
        try:
            frame = protocol.decode(text, sender="server")
        except protocol.ProtocolError as exc:
            log.warning("bad frame from the server (%s): %s", exc.code, exc.message)
            await conn.send("error", code=exc.code, message=exc.message)
            return
        if frame.get("ack") is not None:
            self._on_ack(conn, frame["ack"])
        seq, kind = frame["seq"], frame["type"]
        if seq <= conn.peer_seq:  # a repeat: already done, say so again
            await conn.send("ack", ack=conn.peer_seq)
            return
        if seq > conn.peer_seq + 1:
            await conn.send(
                "error",
                code=protocol.ERR_OUT_OF_ORDER,
                message=f"expected seq {conn.peer_seq + 1}, got {seq}",
            )
        conn.peer_seq = seq
        sent_before = conn.seq
        try:
            await self._dispatch(conn, frame)
        except ConnectionClosed:
            raise
        except Exception as exc:
            log.exception("could not handle %s", kind)
            await conn.send(
                "error", code=protocol.ERR_MALFORMED, message=f"could not handle {kind}: {exc}"
            )
        if kind not in ("ack", "error") and conn.seq == sent_before:
            await conn.send("ack", ack=conn.peer_seq)

    async def _dispatch(self, conn: _Connection, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "welcome":
            self._on_welcome(conn, frame)
        elif kind == "start":
            status = self.runs.start(frame)
            if status.stale:
                await conn.send(
                    "error", code=protocol.ERR_STALE_START,
                    message=f"run {status.run}: {status.reason}",
                )  # fmt: skip
            elif status.state != protocol.RUN_STARTING:
                await self._send_state(conn, status)
        elif kind == "signal":
            found = self.runs.signal(
                frame["run"], reason=frame["reason"], grace_period=float(frame["grace_period"])
            )
            if found is None:
                await conn.send(
                    "error",
                    code=protocol.ERR_UNKNOWN_RUN,
                    message=f"run {frame['run']} is not on this node",
                )
        elif kind == "error":
            log.warning("the server says %s: %s", frame["code"], frame["message"])

    def _on_welcome(self, conn: _Connection, frame: dict[str, Any]) -> None:
        self.heartbeat_interval = float(frame["heartbeat_interval"])
        self.usage_interval = float(frame["usage_interval"])
        fence_after = frame.get("fence_after")
        self.runs.fence_after = float(fence_after) if fence_after is not None else None
        self.runs.stop_all_except(frame["keep"] or [])
        offsets = {str(k): int(v) for k, v in (frame["log_offsets"] or {}).items()}
        for status in self.runs.statuses():
            key = str(status.run)
            conn.sent_offsets[key] = min(offsets.get(key, 0), self.runs.log_size(key))
        self._touch_lease()
        conn.welcomed.set()
        log.info("welcomed as %s", frame["node"])

    def _on_ack(self, conn: _Connection, ack: int) -> None:
        for key, seq in list(conn.final_seq.items()):
            if seq > ack or conn.last_log_seq.get(key, 0) > ack:
                continue
            if conn.sent_offsets.get(key, 0) < self.runs.log_size(key):
                continue
            self.runs.forget(key)
            for book in (conn.final_seq, conn.sent_offsets, conn.last_log_seq, conn.reported):
                book.pop(key, None)

    # ---- sending --------------------------------------------------------------------

    async def _send_state(self, conn: _Connection, status: RunStatus) -> None:
        key = str(status.run)
        if status.terminal:
            await self._send_logs(conn, key, limit=None)  # every byte before the end
        seq = await conn.send("run_state", **status.message())
        conn.reported[key] = status.state
        if status.terminal:
            conn.final_seq[key] = seq

    async def _send_logs(self, conn: _Connection, key: str, *, limit: int | None) -> None:
        offset = conn.sent_offsets.get(key, 0)
        end = self.runs.log_size(key)
        if limit is not None:
            end = min(end, offset + limit)
        while offset < end:
            data = self.runs.read_log(key, offset, min(LOG_CHUNK, end - offset))
            if not data:
                break
            run = self.runs.run_id(key)
            seq = await conn.send(
                "log", run=run, offset=offset, data=base64.b64encode(data).decode()
            )
            offset += len(data)
            conn.sent_offsets[key] = offset
            conn.last_log_seq[key] = seq

    async def _pump(self, conn: _Connection) -> None:
        """Run states, logs and the lease, every poll interval, and at once when a shim
        says its command started or ended (the wake pipe)."""
        woken = asyncio.Event()
        loop = asyncio.get_running_loop()
        wake_fd = self.runs.wake.fd

        def on_wake() -> None:
            if self.runs.wake.drain():
                woken.set()

        loop.add_reader(wake_fd, on_wake)
        try:
            await self._pump_loop(conn, woken)
        finally:
            loop.remove_reader(wake_fd)

    async def _pump_loop(self, conn: _Connection, woken: asyncio.Event) -> None:
        last_lease = time.monotonic()
        while True:
            woken.clear()
            self.runs.poll()
            for status in self.runs.statuses():
                key = str(status.run)
                if status.state == protocol.RUN_STARTING:
                    continue
                if status.state == protocol.RUN_RUNNING and conn.reported.get(key) in (
                    None,
                    protocol.RUN_STARTING,
                ):
                    await self._send_state(conn, status)
                await self._send_logs(conn, key, limit=LOG_BURST)
                if status.terminal and conn.reported.get(key) != status.state:
                    if conn.reported.get(key) in (None, protocol.RUN_STARTING) and (
                        self.runs.has_started(key)
                    ):
                        # It ran before it ended: the server learns both, in order.
                        running = RunStatus(status.run, status.epoch, protocol.RUN_RUNNING)
                        await self._send_state(conn, running)
                    await self._send_state(conn, status)
            if time.monotonic() - last_lease >= self.config.lease_interval:
                self._touch_lease()
                last_lease = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), self.config.poll_interval)

    async def _every(self, interval: Callable[[], float], conn: _Connection, kind: str) -> None:
        while True:
            await asyncio.sleep(interval())
            if kind == "heartbeat":
                await conn.send("heartbeat")
            else:
                body = usage_message(self.gpu_sampler, self.run_sampler, self.runs.live_groups())
                await conn.send("usage", **body)

    def _touch_lease(self) -> None:
        lease = self.runs.lease_file
        try:
            os.utime(lease)
        except FileNotFoundError:
            lease.touch()


def _raise_if_fatal(code: int | None, reason: str | None) -> None:
    if code in (protocol.CLOSE_UNAUTHORIZED, protocol.CLOSE_FORBIDDEN):
        raise CredentialRejected(
            f"the server rejected this node's credential ({code}): {reason or 'no reason given'}"
        )
    if code == protocol.CLOSE_VERSION:
        raise VersionRejected(
            f"the server does not speak protocol v{protocol.VERSION}: {reason or code}"
        )


async def _finish(task: asyncio.Task[Any] | Awaitable[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
        await task
