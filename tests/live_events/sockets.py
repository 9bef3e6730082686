"""Driving a console websocket from a sync test: run an async body, connect, subscribe."""

from __future__ import annotations

from asgiref.sync import async_to_sync

TIMEOUT = 3


def run(test):
    """Run an async test body to completion (no pytest-asyncio needed)."""
    return async_to_sync(test)()


async def connect(open_socket, user):
    """A connected websocket of `user` (see the `open_socket` fixture)."""
    ws = open_socket(user)
    connected, _ = await ws.connect(timeout=TIMEOUT)
    assert connected
    return ws


async def subscribe(ws, groups: list[str], action: str = "subscribe") -> dict:
    """Send a (un)subscribe message and return the server's answer."""
    await ws.send_json_to({"action": action, "groups": groups})
    return await ws.receive_json_from(timeout=TIMEOUT)


async def browser_socket(browser):
    """A connected websocket of a signed-in test Client (its session cookie), through the
    real ASGI stack: session and auth middleware, origin check."""
    from channels.testing import WebsocketCommunicator

    from config.asgi import application

    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    ws = WebsocketCommunicator(
        application,
        "/ws/events/",
        headers=[(b"cookie", cookie.encode()), (b"origin", b"http://testserver")],
    )
    connected, _ = await ws.connect(timeout=TIMEOUT)
    assert connected
    return ws
