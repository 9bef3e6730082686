"""Websockets through the proxy: the browser's handshake is answered once the pod's is
(with the subprotocol the pod chose), then frames go both ways as they are, text as text
and binary as binary, and a close on either side closes the other with its code."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from console.proxy.headers import forwarded, request_headers

logger = logging.getLogger(__name__)

OPEN_TIMEOUT = 10.0
MAX_MESSAGE = 64 * 1024 * 1024  # bytes of one message, either way
# Codes a peer may not send in a close frame (RFC 6455 7.4.1): they say how it ended.
NOT_SENDABLE = frozenset({1005, 1006, 1015})
CLOSE_POD_GONE = 1011  # an unexpected condition: the pod went away
CLOSE_UNREACHABLE = 1014  # bad gateway


def _close_code(code: int | None) -> int:
    if code is None or code in NOT_SENDABLE:
        return CLOSE_POD_GONE if code in (1006, None) else 1000
    return code


async def _open(url: str, scope: dict[str, Any], prefix: str) -> ClientConnection:
    headers = request_headers(list(scope.get("headers", [])), websocket=True)
    headers += forwarded(scope, prefix)
    pairs = [(n.decode("latin1"), v.decode("latin1")) for n, v in headers]
    host = next((v for n, v in pairs if n == "host"), None)
    pairs = [(n, v) for n, v in pairs if n not in ("host", "origin")]
    origin = next((v for n, v in scope.get("headers", []) if n.lower() == b"origin"), None)
    return await connect(
        url,
        additional_headers=pairs + ([("Host", host)] if host else []),
        origin=origin.decode("latin1") if origin else None,  # type: ignore[arg-type]
        subprotocols=scope.get("subprotocols") or None,
        open_timeout=OPEN_TIMEOUT,
        max_size=MAX_MESSAGE,
        compression=None,
        user_agent_header=None,
        proxy=None,
    )


async def _browser_to_pod(receive, pod: ClientConnection) -> None:
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            await pod.close(_close_code(message.get("code")))
            return
        if message.get("bytes") is not None:
            await pod.send(message["bytes"])
        elif message.get("text") is not None:
            await pod.send(message["text"])


async def _pod_to_browser(send, pod: ClientConnection) -> None:
    try:
        async for data in pod:
            key = "text" if isinstance(data, str) else "bytes"
            await send({"type": "websocket.send", key: data})
    except ConnectionClosed:
        pass
    await send({"type": "websocket.close", "code": _close_code(pod.close_code),
                "reason": (pod.close_reason or "")[:120]})  # fmt: skip


async def proxy_websocket(scope, receive, send, *, url: str, prefix: str, pod: str) -> None:
    """Relay one websocket between the browser and the pod at `url`."""
    try:
        upstream = await _open(url, scope, prefix)
    except (OSError, TimeoutError, InvalidHandshake, InvalidStatus) as exc:
        logger.info("websocket proxy to %s failed: %r", url, exc)
        await send({"type": "websocket.close", "code": CLOSE_UNREACHABLE})
        return
    await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})
    tasks = [
        asyncio.ensure_future(_browser_to_pod(receive, upstream)),
        asyncio.ensure_future(_pod_to_browser(send, upstream)),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed, OSError):
                await task
        await upstream.close()
