"""The cycle lock on Redis: a Redis gone before the cycle ends is an outage, said in one
line (the lock expires by itself), not a traceback."""

from __future__ import annotations

import logging

from scheduler_core.loop.locks import RedisLock
from tests.redis_server import redis_until_stopped


def test_a_lock_released_after_redis_stopped_says_so_without_a_traceback(caplog):
    with redis_until_stopped() as url:
        lock = RedisLock("test-cycle-lock", url, ttl=30)
        assert lock.acquire()
    with caplog.at_level(logging.WARNING, logger="scheduler_core.loop.locks"):
        lock.release()
    [record] = caplog.records
    assert "Redis is unreachable" in record.getMessage()
    assert "expires by itself" in record.getMessage()
    assert record.exc_info is None
