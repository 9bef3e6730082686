"""Fixtures of the websocket tests: a channel layer of their own (whatever CHANNEL_LAYERS
is active: in-memory, or channels_redis when REDIS_URL is set), and a way to open a
console websocket as a given user."""

from __future__ import annotations

import copy
import uuid

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from config.routing import websocket_urlpatterns


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """The `cluster` fixture creates six users; real password hashing costs seconds."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def isolated_channel_layer(settings):
    """A fresh layer per test; on Redis, a key prefix of its own (the Redis may be shared)."""
    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    layer = layers["default"]
    if "redis" in layer["BACKEND"].lower():
        layer.setdefault("CONFIG", {})["prefix"] = f"fairway-test-{uuid.uuid4().hex[:10]}"
    settings.CHANNEL_LAYERS = layers  # channels drops cached layers on this signal
    yield layer["BACKEND"]


@pytest.fixture
def open_socket():
    """open_socket(user) -> a WebsocketCommunicator on /ws/events/ with `user` in the scope
    (as AuthMiddlewareStack would put it). Call `await ws.connect()` yourself."""

    def _open(user) -> WebsocketCommunicator:
        ws = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/events/")
        ws.scope["user"] = user
        return ws

    return _open
