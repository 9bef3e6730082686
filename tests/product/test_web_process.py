"""A web process's connections are TCP with TCP_NODELAY (config.web_process): uvicorn's own
`--fd` opened the inherited port as a Unix socket, so every small answer waited about
40 ms for the client's delayed ACK (Nagle's algorithm)."""

from __future__ import annotations

import http.client
import os
import socket
import threading
import time

from config import web_process
from config.web_process import inherited, web_server
from scheduler_core.live_events import publisher as event_publisher
from scheduler_core.management.commands.run import listening_socket


async def hello(scope, receive, send) -> None:
    """The smallest ASGI answer: headers, then a body, as two writes."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def test_a_web_process_serves_its_inherited_port_as_tcp_with_nodelay():
    listening = listening_socket("127.0.0.1", 0)
    port = listening.getsockname()[1]
    server = web_server("tests.product.test_web_process:hello")
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [inherited(os.dup(listening.fileno()))]}, daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/")
        response = conn.getresponse()
        assert response.status == 200 and response.read() == b"hello"
        (connection,) = server.server_state.connections
        accepted = connection.transport.get_extra_info("socket")
        assert accepted.family == socket.AF_INET
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        conn.close()
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        listening.close()


def test_a_web_process_publishes_its_events_from_a_thread_of_its_own(monkeypatch):
    """A request that records events (a submission, an agent's report) answers without
    waiting for the channel layer (tests/product/test_web_server.py: the events still
    reach a browser's websocket)."""
    monkeypatch.setenv(event_publisher.ENV_FLAG, "0")  # restored after the test
    seen: dict[str, bool] = {}

    class Server:
        def run(self, sockets) -> None:
            seen["in background"] = event_publisher.enabled()
            for s in sockets:
                s.close()

    monkeypatch.setattr(web_process, "web_server", lambda app: Server())
    listening = listening_socket("127.0.0.1", 0)
    try:
        web_process.serve(os.dup(listening.fileno()))
    finally:
        listening.close()
    assert seen == {"in background": True}
