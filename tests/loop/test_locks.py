"""The cycle lock on Redis: a Redis gone before the cycle ends is an outage, said in one
line (the lock expires by itself), not a traceback."""

from __future__ import annotations

import logging
import subprocess

from scheduler_core.loop.locks import RedisLock
from scheduler_core.management.commands.run import free_port, redis_server_binary, wait_for_port


def test_a_lock_released_after_redis_stopped_says_so_without_a_traceback(caplog):
    port = free_port()
    redis = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    try:
        assert wait_for_port(port)
        lock = RedisLock("test-cycle-lock", f"redis://127.0.0.1:{port}/0", ttl=30)
        assert lock.acquire()
    finally:
        redis.terminate()
        redis.wait(timeout=10)
    with caplog.at_level(logging.WARNING, logger="scheduler_core.loop.locks"):
        lock.release()
    [record] = caplog.records
    assert "Redis is unreachable" in record.getMessage()
    assert "expires by itself" in record.getMessage()
    assert record.exc_info is None
