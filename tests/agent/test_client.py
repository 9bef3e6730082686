"""The agent's websocket client against a small in-test server speaking the server side of
protocol v1 (docs/agent.md)."""

import asyncio
import base64
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from fairway_agent import protocol
from fairway_agent.client import AgentClient, ClientConfig, CredentialRejected
from fairway_agent.discovery import Inventory, fake_gpus
from fairway_agent.usage import GpuSampler
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from tests.agent.helpers import manager, pod, start_msg

TIMEOUT = 10


class FakeServer:
    """Accepts agent connections; tests read frames and send them by connection."""

    def __init__(self) -> None:
        self.connections: asyncio.Queue[Peer] = asyncio.Queue()
        self.close_with: tuple[int, str] | None = None

    async def handler(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        assert ws.request.headers["Authorization"] == "Bearer node-secret"
        if self.close_with:
            await ws.close(*self.close_with)
            return
        peer = Peer(ws)
        await self.connections.put(peer)
        with contextlib.suppress(ConnectionClosed):
            async for text in ws:
                frame = protocol.decode(text, sender="agent")
                if frame["type"] == "log":
                    peer.logs.setdefault(frame["run"], []).append(frame)
                await peer.frames.put(frame)

    async def next_peer(self) -> "Peer":
        return await asyncio.wait_for(self.connections.get(), TIMEOUT)


class Peer:
    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.seq = 0
        self.frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.logs: dict[Any, list[dict[str, Any]]] = {}  # every log frame, by run

    async def send(self, kind: str, **body: Any) -> None:
        self.seq += 1
        await self.ws.send(protocol.encode(kind, self.seq, **body))

    async def expect(self, kind: str, **match: Any) -> dict[str, Any]:
        """The next frame of `kind` (and fields `match`), skipping heartbeats and the rest."""

        async def find() -> dict[str, Any]:
            while True:
                frame = await self.frames.get()
                if frame["type"] == kind and all(frame.get(k) == v for k, v in match.items()):
                    return frame

        return await asyncio.wait_for(find(), TIMEOUT)

    async def logs_until_exited(self, run: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Every log frame of `run` on this connection, once the run has exited."""
        exited = await self.expect("run_state", run=run, state=protocol.RUN_EXITED)
        return self.logs.get(run, []), exited

    async def welcome(self, keep=(), log_offsets=None) -> None:
        await self.send(
            "welcome",
            node="n1",
            keep=list(keep),
            log_offsets=log_offsets or {},
            heartbeat_interval=0.3,
            usage_interval=0.3,
            lost_after=60,
            fence_after=30,
        )


def client_for(tmp_path: Path, port: int) -> AgentClient:
    devices = fake_gpus(2, "n1")
    config = ClientConfig(
        url=f"ws://127.0.0.1:{port}/ws/agents/",
        node_token="node-secret",
        node="n1",
        address="10.0.0.1",
        inventory=Inventory(devices=devices, cpu=4, memory_gib=16.0, source="fake"),
    )
    return AgentClient(config, manager(tmp_path / "state", gpus=2), GpuSampler(devices, None))


def joined(chunks: list[dict[str, Any]], start: int = 0) -> bytes:
    """The chunks' bytes, checking they follow each other from `start` without a gap or an
    overlap, each at most 64 KiB."""
    data = b""
    for chunk in chunks:
        assert chunk["offset"] == start + len(data)
        piece = base64.b64decode(chunk["data"])
        assert 0 < len(piece) <= 64 * 1024
        data += piece
    return data


# Prints numbered lines (well over one 64 KiB chunk), waits for a `go` file, prints more.
CHATTY = """
import os, pathlib, sys, time
for i in range(4000):
    print(f"line {i:05d} " + "x" * 30)
sys.stdout.flush()
d = pathlib.Path(os.environ["FAIRWAY_RUN_DIR"])
while not (d / "go").exists():
    time.sleep(0.05)
print("done")
"""
EXPECTED = "".join(f"line {i:05d} " + "x" * 30 + "\n" for i in range(4000)) + "done\n"


async def _with_server(test, tmp_path: Path):
    server = FakeServer()
    async with serve(server.handler, "127.0.0.1", 0) as ws_server:
        port = ws_server.sockets[0].getsockname()[1]
        client = client_for(tmp_path, port)
        agent = asyncio.create_task(client.run_forever())
        try:
            await test(server, client, agent)
        finally:
            agent.cancel()
            await asyncio.gather(agent, return_exceptions=True)


def test_a_run_from_start_to_exit_with_complete_ordered_logs(tmp_path):
    async def scenario(server, client, agent):
        peer = await server.next_peer()
        hello = await peer.expect("hello")
        assert hello["seq"] == 1 and hello["node"] == "n1" and hello["runs"] == []
        assert [d["index"] for d in hello["devices"]] == [0, 1]
        assert hello["capabilities"] == client.runs.capabilities
        await peer.welcome()
        await peer.send("start", **start_msg(7, 1, pod(CHATTY), gpus=[1]))
        running = await peer.expect("run_state", run=7)
        assert running["state"] == protocol.RUN_RUNNING and running["epoch"] == 1
        usage = await peer.expect("usage")
        assert [g["utilization"] for g in usage["gpus"]] == [0, 0]
        await peer.expect("heartbeat")
        (client.runs.runs["7"].dir.work / "go").touch()
        chunks, exited = await peer.logs_until_exited(7)
        assert joined(chunks).decode() == EXPECTED
        assert (exited["exit_code"], exited["signal"]) == (0, None)

    asyncio.run(_with_server(scenario, tmp_path))


def test_bad_frames_are_answered_with_errors_and_the_session_goes_on(tmp_path):
    async def scenario(server, client, agent):
        peer = await server.next_peer()
        await peer.expect("hello")
        await peer.welcome()
        await peer.ws.send("this is not json")
        assert (await peer.expect("error"))["code"] == protocol.ERR_MALFORMED
        await peer.ws.send(json.dumps({"v": 1, "seq": 2, "type": "start", "run": 1}))
        assert "start lacks" in (await peer.expect("error"))["message"]
        peer.seq = 0
        await peer.welcome()  # a repeat of seq 1: acknowledged again, not done again
        assert (await peer.expect("ack"))["ack"] == 1
        peer.seq = 4  # a gap: 2..4 never came
        await peer.send("signal", run=99, reason="cancel", grace_period=1)
        assert (await peer.expect("error"))["code"] == protocol.ERR_OUT_OF_ORDER
        assert (await peer.expect("error"))["code"] == protocol.ERR_UNKNOWN_RUN
        await peer.send("start", **start_msg(8, 1, pod("print('still here')")))
        chunks, exited = await peer.logs_until_exited(8)
        assert joined(chunks) == b"still here\n" and exited["exit_code"] == 0
        assert not agent.done()

    asyncio.run(_with_server(scenario, tmp_path))


def test_after_a_reconnect_logs_resume_from_the_servers_offsets(tmp_path):
    async def scenario(server, client, agent):
        peer = await server.next_peer()
        await peer.expect("hello")
        await peer.welcome()
        await peer.send("start", **start_msg(7, 1, pod(CHATTY)))
        while len(joined(peer.logs.get(7, []))) < len(EXPECTED) - len("done\n"):
            await peer.expect("log", run=7)
        first = peer.logs[7]
        stored = first[0]["offset"] + len(base64.b64decode(first[0]["data"]))  # kept 1 chunk
        await peer.ws.close()

        peer = await server.next_peer()
        hello = await peer.expect("hello")
        assert hello["seq"] == 1  # numbering starts again on every connection
        [run] = hello["runs"]
        assert run["run"] == 7 and run["state"] == protocol.RUN_RUNNING
        assert run["log_size"] == len(EXPECTED) - len("done\n")
        await peer.welcome(keep=[7], log_offsets={"7": stored})
        (client.runs.runs["7"].dir.work / "go").touch()
        chunks, exited = await peer.logs_until_exited(7)
        assert joined(chunks, start=stored).decode() == EXPECTED[stored:]
        assert exited["exit_code"] == 0

    asyncio.run(_with_server(scenario, tmp_path))


def test_a_revoked_credential_ends_the_agent_instead_of_looping(tmp_path):
    async def scenario(server, client, agent):
        with pytest.raises(CredentialRejected, match="revoked"):
            await asyncio.wait_for(agent, TIMEOUT)

    async def run():
        server = FakeServer()
        server.close_with = (protocol.CLOSE_UNAUTHORIZED, "token revoked")
        async with serve(server.handler, "127.0.0.1", 0) as ws_server:
            port = ws_server.sockets[0].getsockname()[1]
            agent = asyncio.create_task(client_for(tmp_path, port).run_forever())
            await scenario(server, None, agent)

    asyncio.run(run())
