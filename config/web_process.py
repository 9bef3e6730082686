"""One web process: uvicorn serving config.asgi on an inherited listening socket.

`python -m config.web_process FD` (what `manage.py run` starts for each web process). It
is uvicorn's `--fd` with one difference: uvicorn opens an inherited descriptor as a Unix
socket whatever it is, so uvloop treats every connection accepted on a TCP port as a Unix
stream and never sets TCP_NODELAY on it. A response goes out as two writes (headers, then
body); with Nagle's algorithm on, the body waited for the client's delayed ACK of the
headers, about 40 ms on Linux, and every small API answer took that long. Here the socket
is opened as what it is (`socket.socket(fileno=...)` asks the kernel), so connections are
TCP and get TCP_NODELAY.

Its live events go out from a publisher thread of its own (as in a Celery worker): a
request that records one (a submission, a cancel, an agent's report) answers without
waiting for the channel layer's sends, which ran on the process's event loop among the
other requests.
"""

from __future__ import annotations

import socket
import sys

import uvicorn

from scheduler_core.live_events import publisher as event_publisher


def serve(fd: int) -> None:
    """Serve config.asgi on the listening socket `fd` until stopped (SIGTERM, SIGINT)."""
    event_publisher.enable()
    web_server("config.asgi:application").run(sockets=[inherited(fd)])


def inherited(fd: int) -> socket.socket:
    """The listening socket `fd` as what it is (AF_INET for a TCP port: the kernel says)."""
    return socket.socket(fileno=fd)


def web_server(app: str) -> uvicorn.Server:
    """uvicorn serving `app` ("module:attribute") as a web process does."""
    config = uvicorn.Config(
        app,
        loop="uvloop",  # uvloop's event loop
        http="httptools",  # httptools parses HTTP
        ws="websockets",  # the websockets library speaks the websocket protocol
        lifespan="off",  # Channels' router has no lifespan events
        access_log=False,  # a line per request costs as much as a small answer
        proxy_headers=False,  # X-Forwarded-For is not trusted (sign-ins count per peer)
        server_header=False,
        timeout_graceful_shutdown=5,  # websockets closed (1012) within 5 s on stop
        log_level="warning",
    )
    return uvicorn.Server(config)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
