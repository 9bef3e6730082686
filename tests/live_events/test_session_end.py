"""A browser's websocket lives only as long as its session: closed on sign-out and once
the session has expired, while the user's other sessions stay open."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from console import consumers
from scheduler_core.choices import EventType
from tests.live_events.sockets import TIMEOUT, browser_socket, run, subscribe
from tests.live_events.test_consumer import record

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in_browser(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


async def subscribed_socket(browser: Client):
    ws = await browser_socket(browser)
    assert (await subscribe(ws, ["cluster"]))["type"] == "subscribed"
    return ws


def test_signing_out_closes_that_sessions_sockets_only(cluster):
    user = cluster["researcher"]
    browser, other_browser = signed_in_browser(user), signed_in_browser(user)

    async def body():
        ws = await subscribed_socket(browser)
        other = await subscribed_socket(other_browser)
        response = await sync_to_async(browser.post)("/logout/")
        assert response.status_code == 302
        assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}
        await other.send_json_to({"action": "ping"})
        assert await other.receive_json_from(timeout=TIMEOUT) == {"type": "pong"}
        await other.disconnect()

    run(body)


def test_an_expired_session_gets_no_more_events(cluster, monkeypatch):
    monkeypatch.setattr(consumers, "ACCESS_TTL", 0.0)  # re-check on every batch
    browser = signed_in_browser(cluster["researcher"])
    vision = cluster["vision"]

    async def body():
        ws = await subscribed_socket(browser)
        await sync_to_async(record)(type=EventType.QUOTA_CHANGED, project=vision, reason="one")
        assert (await ws.receive_json_from(timeout=TIMEOUT))["event"]["reason"] == "one"
        await sync_to_async(Session.objects.update)(expire_date=timezone.now() - timedelta(1))
        await sync_to_async(record)(type=EventType.QUOTA_CHANGED, project=vision, reason="two")
        assert await ws.receive_output(timeout=TIMEOUT) == {"type": "websocket.close", "code": 4401}

    run(body)
