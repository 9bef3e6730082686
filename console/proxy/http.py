"""HTTP through the proxy: the request goes to the pod as it came (method, path with its
proxy prefix, query, headers less Fairway's credentials and the hop-by-hop ones, the body
streamed), and the pod's answer comes back streamed, whatever its size or duration (a
notebook's long polls, server-sent events). A pod that does not answer gets a 502 that
says so, never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx

from console.proxy.headers import forwarded, request_headers, response_headers
from scheduler_core.runtime.ports import port_env_name

logger = logging.getLogger(__name__)

TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=60.0, pool=10.0)
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def client() -> httpx.AsyncClient:
    """This event loop's client (its connection pool serves every proxied request)."""
    loop = asyncio.get_running_loop()
    found = _clients.get(loop)
    if found is None:
        found = httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False, trust_env=False)
        _clients[loop] = found
    return found


async def respond(send, status: int, text: str, headers: list | None = None) -> None:
    """A short plain-text answer of Fairway's own."""
    body = (text.rstrip("\n") + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def upstream_url(host: str, port: int, scope: dict[str, Any]) -> str:
    """The pod's URL of the request: the same path (proxy prefix included) and query."""
    path = (scope.get("raw_path") or scope["path"].encode()).decode("latin1")
    query = scope.get("query_string", b"").decode("latin1")
    where = f"[{host}]" if ":" in host else host
    return f"http://{where}:{port}{path}" + (f"?{query}" if query else "")


async def _body(receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        if message.get("body"):
            yield message["body"]
        if not message.get("more_body"):
            return


def _request(scope: dict[str, Any], receive, url: str, prefix: str) -> httpx.Request:
    headers = request_headers(list(scope.get("headers", []))) + forwarded(scope, prefix)
    host = next((v for n, v in scope.get("headers", []) if n.lower() == b"host"), None)
    if host:
        headers.append((b"host", host))  # the browser's: apps compare it with Origin
    has_body = any(n.lower() in (b"content-length", b"transfer-encoding")
                   for n, _ in scope.get("headers", []))  # fmt: skip
    return client().build_request(
        scope["method"], url, headers=headers, content=_body(receive) if has_body else None
    )


async def _stream(response: httpx.Response, send, receive) -> None:
    """The pod's answer to the browser until it ends or the browser leaves."""
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": response_headers(list(response.headers.raw)),
        }
    )

    async def copy() -> None:
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def left() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    copying, leaving = asyncio.ensure_future(copy()), asyncio.ensure_future(left())
    browser_left = True
    try:
        done, _ = await asyncio.wait({copying, leaving}, return_when=asyncio.FIRST_COMPLETED)
        browser_left = leaving in done
    finally:
        for task in (copying, leaving):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await task
    if not browser_left:  # the pod's answer ended (or broke off): so does the browser's
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def proxy_http(scope, receive, send, *, host: str, port: int, prefix: str, pod: str):
    """Serve one HTTP request from the pod listening at host:port."""
    request = _request(scope, receive, upstream_url(host, port, scope), prefix)
    try:
        response = await client().send(request, stream=True)
    except httpx.HTTPError as exc:
        logger.info("proxy to %s:%s failed: %r", host, port, exc)
        await respond(send, 502, not_listening(pod, prefix, host, port, exc))
        return
    try:
        await _stream(response, send, receive)
    finally:
        await response.aclose()


def not_listening(pod: str, prefix: str, host: str, port: int, exc: Exception) -> str:
    """The 502's message: which pod, where, and what went wrong."""
    name = prefix.rstrip("/").rsplit("/", 1)[-1]
    why = str(exc) or type(exc).__name__
    return (
        f"Bad gateway: pod {pod} does not answer on its port {name} ({host}:{port}): {why}.\n"
        "Its process may still be starting, or it does not listen on the port Fairway gave "
        f"it ({port_env_name(name)}, on all interfaces)."
    )
