"""The Redis channel layer as configured: a consumer waiting for messages on an idle channel
is not cut off by the Redis client's socket timeout (which closed every idle websocket with
1011 after 5 s)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings


def redis_layer_config() -> dict:
    layer = settings.CHANNEL_LAYERS["default"]
    if "redis" not in layer["BACKEND"].lower():
        pytest.skip("needs the Redis channel layer: run with REDIS_URL (bin/services start)")
    return dict(layer.get("CONFIG", {}))


def test_the_socket_timeout_outlasts_the_layers_blocking_read():
    for host in redis_layer_config()["hosts"]:
        assert isinstance(host, dict), "give the socket timeout with each host"
        assert host["socket_timeout"] > RedisChannelLayer.brpop_timeout


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
