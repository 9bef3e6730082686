"""A fake node agent for transport tests: registers through the API and speaks protocol v1
over a WebsocketCommunicator against the real ASGI application."""

from __future__ import annotations

import base64
import json
from typing import Any

from channels.testing import WebsocketCommunicator
from fairway_agent import protocol

TIMEOUT = 5

DEVICES = [
    {"index": 0, "uuid": "GPU-aaa", "model": "H100", "memory_mib": 81559},
    {"index": 1, "uuid": "GPU-bbb", "model": "H100", "memory_mib": 81559},
]


def registration(join_token: str, hostname: str = "gpu-a", **overrides: Any) -> dict[str, Any]:
    """The body an agent posts to /api/v1/agents/register/."""
    return {
        "join_token": join_token,
        "hostname": hostname,
        "address": "10.0.0.7",
        "devices": DEVICES,
        "cpu": 32,
        "memory_gib": 256,
        "agent_version": "0.1.0",
        "capabilities": {"containers": False},
        **overrides,
    }


class FakeAgent:
    """One websocket connection of an agent, numbering its own frames."""

    def __init__(self, node_token: str | None) -> None:
        from config.asgi import application

        headers = [(b"authorization", f"Bearer {node_token}".encode())] if node_token else []
        self.ws = WebsocketCommunicator(application, "/ws/agents/", headers=headers)
        self.seq = 0

    async def connect(self) -> None:
        connected, _ = await self.ws.connect(timeout=TIMEOUT)
        assert connected

    async def send(self, type: str, *, seq: int | None = None, **body: Any) -> int:
        if seq is None:
            self.seq += 1
            seq = self.seq
        await self.ws.send_to(text_data=protocol.encode(type, seq, **body))
        return seq

    async def send_raw(self, text: str) -> None:
        await self.ws.send_to(text_data=text)

    async def receive(self) -> dict[str, Any]:
        return json.loads(await self.ws.receive_from(timeout=TIMEOUT))

    async def hello(self, node: str, runs: list[dict] | None = None) -> dict[str, Any]:
        await self.send(
            "hello",
            node=node,
            agent_version="0.1.0",
            address="10.0.0.7",
            devices=DEVICES,
            capabilities={"containers": True},
            cpu=32,
            memory_gib=256,
            max_epoch=0,
            runs=runs or [],
        )
        return await self.receive()

    async def log(self, run: int, offset: int, data: bytes) -> dict[str, Any]:
        await self.send("log", run=run, offset=offset, data=base64.b64encode(data).decode())
        return await self.receive()

    async def closed_with(self) -> int:
        """The close code the server closed with, once the consumer has finished (as the
        server would, the socket is then disconnected: no consumer task is left running
        when the test's event loop closes)."""
        output = await self.ws.receive_output(timeout=TIMEOUT)
        assert output["type"] == "websocket.close", output
        await self.ws.disconnect(timeout=TIMEOUT)
        return output["code"]

    async def close(self) -> None:
        await self.ws.disconnect()
