"""The Redis channel layer as configured: a consumer waiting for messages on an idle channel
is not cut off by the Redis client's socket timeout (which closed every idle websocket with
1011 after 5 s), and a receive that is cancelled (a websocket that closes) always ends."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings


def redis_layer_config() -> dict:
    layer = settings.CHANNEL_LAYERS["default"]
    if "redis" not in layer["BACKEND"].lower():
        pytest.skip("needs the Redis channel layer: run with REDIS_URL (bin/services start)")
    return dict(layer.get("CONFIG", {}))


def test_the_layer_reads_without_a_socket_timeout_and_keeps_tcp_keepalive():
    for host in redis_layer_config()["hosts"]:
        assert isinstance(host, dict), "give the socket options with each host"
        assert "socket_timeout" in host and host["socket_timeout"] is None
        assert host.get("socket_keepalive", True), "keepalive finds a dead connection"


def test_a_cancelled_receive_always_ends():
    """What channels does to a websocket's receive when the socket closes. With a socket
    timeout, redis-py sends each command through asyncio.wait_for, which on Python 3.11 can
    swallow a cancellation that comes as the send completes: the receive then looped on
    BZPOPMIN for good, one leaked task and connection per unlucky close (and a test's event
    loop that never closed, which hung the whole test run at exit). Found within some ten
    tries before the fix."""
    config = redis_layer_config()
    config["prefix"] = f"fw-cancel-{uuid.uuid4().hex[:8]}"
    layer = RedisChannelLayer(**config)
    rng = random.Random(17)

    async def cancel_receives(tries: int) -> list[int]:
        stuck = []
        for attempt in range(tries):
            receiving = asyncio.ensure_future(layer.receive(await layer.new_channel()))
            await asyncio.sleep(rng.uniform(0, 0.01))
            receiving.cancel()
            done, _ = await asyncio.wait({receiving}, timeout=RedisChannelLayer.brpop_timeout + 3)
            if not done:
                stuck.append(attempt)
                receiving.cancel()  # again, so that the loop can close
                await asyncio.wait({receiving}, timeout=RedisChannelLayer.brpop_timeout + 3)
                break
        await layer.flush()
        return stuck

    assert asyncio.run(cancel_receives(150)) == []


@pytest.mark.services
def test_an_idle_receive_keeps_waiting_past_the_blocking_read():
    config = redis_layer_config()
    config["prefix"] = f"fw-idle-{uuid.uuid4().hex[:8]}"
    layer = RedisChannelLayer(**config)
    waited = RedisChannelLayer.brpop_timeout + 2.0

    async def idle_then_message() -> dict:
        channel = await layer.new_channel()
        receiving = asyncio.ensure_future(layer.receive(channel))
        done, _ = await asyncio.wait({receiving}, timeout=waited)
        assert not done, f"receive ended while idle: {receiving.exception()!r}"
        await layer.send(channel, {"type": "scheduling.events", "events": []})
        message = await asyncio.wait_for(receiving, 5)
        await layer.flush()
        return message

    assert asyncio.run(idle_then_message())["type"] == "scheduling.events"
