"""Fairway's proxy to interactive pods (docs/interactive.md): `/proxy/<workload>/<pod>/
<port>/...` goes to the port the pod's node gave it, HTTP (http.py) and websockets
(websocket.py), for a user signed in to the console who may see the workload (the one
access rule, `visible_to`, as on the workload's page).

- not signed in: a browser's page request is sent to the sign-in page (and back after);
  any other request gets 401; a websocket is refused;
- a workload the user may not see, or no such pod or port: 404, as for the page;
- the pod is not running, or does not answer on its port: 502 with a message that says so;
- the pod's answer: its status, headers and body as they come, streamed.

The path reaches the pod whole (prefix included): apps serve under the prefix they are
given in FAIRWAY_PROXY_PREFIX (a notebook's base URL, TensorBoard's --path_prefix).
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.shortcuts import resolve_url
from django.utils.http import urlencode

from console.proxy.access import Asked, Decision, asked, decide
from console.proxy.http import proxy_http, respond, upstream_url
from console.proxy.websocket import proxy_websocket
from scheduler_core.selectors.ports import ProxyTarget

CLOSE_UNAUTHORIZED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_BAD_GATEWAY = 1014
CLOSE_TRY_AGAIN = 1013
NOT_FOUND = (
    "Not found: no such workload, pod or port, or you may not see this workload.\n"
    "Proxy paths are /proxy/<workload id>/<pod>/<port name>/ (see the workload's page)."
)


async def _refuse_http(scope: dict[str, Any], send, where: Asked | None, signed_in: bool):
    if where is not None and not signed_in:
        accept = next((v for n, v in scope.get("headers", []) if n.lower() == b"accept"), b"")
        if scope["method"] in ("GET", "HEAD") and b"text/html" in accept:
            back = urlencode({"next": scope["path"]})
            location = f"{resolve_url('console:login')}?{back}"
            await respond(send, 302, "Sign in first.", [(b"location", location.encode())])
        else:
            await respond(send, 401, "Sign in to Fairway first (the console's session).")
        return
    await respond(send, 404, NOT_FOUND)


async def _slash(scope: dict[str, Any], send, where: Asked) -> None:
    query = scope.get("query_string", b"").decode("latin1")
    location = where.prefix + (f"?{query}" if query else "")
    await respond(send, 308, "See the trailing slash.", [(b"location", location.encode())])


async def _unavailable(scope: dict[str, Any], send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": CLOSE_TRY_AGAIN})
    else:
        await respond(send, 503, "Fairway cannot reach its database: try again soon.",
                      [(b"retry-after", b"5")])  # fmt: skip


async def _refuse(scope: dict[str, Any], send, where: Asked | None, decision: Decision | None):
    """No target: not signed in (401 or the sign-in page), or nothing to see (404)."""
    signed_in = decision is not None and decision.signed_in
    if scope["type"] != "websocket":
        await _refuse_http(scope, send, where, signed_in)
        return
    code = CLOSE_UNAUTHORIZED if where is not None and not signed_in else CLOSE_NOT_FOUND
    await send({"type": "websocket.close", "code": code})


async def _relay(scope: dict[str, Any], receive, send, where: Asked, target: ProxyTarget):
    if scope["type"] == "websocket":
        if target.problem:
            await send({"type": "websocket.close", "code": CLOSE_BAD_GATEWAY})
            return
        url = "ws" + upstream_url(target.host, target.port, scope)[len("http") :]
        await proxy_websocket(scope, receive, send, url=url, prefix=where.prefix, pod=where.pod)
    elif target.problem:
        await respond(send, 502, f"Bad gateway: {target.problem}.")
    else:
        await proxy_http(scope, receive, send, host=target.host, port=target.port,
                         prefix=where.prefix, pod=where.pod)  # fmt: skip


async def proxy_app(scope: dict[str, Any], receive, send) -> None:
    """The ASGI application of every /proxy/ path (HTTP and websockets)."""
    if scope["type"] == "websocket":
        await receive()  # websocket.connect: answered by an accept or a close
    where = asked(scope["path"])
    if where is not None and where.rest is None and scope["type"] == "http":
        await _slash(scope, send, where)
        return
    try:
        decision = await decide(scope, where) if where is not None else None
    except DatabaseError:
        await _unavailable(scope, send)
        return
    if where is None or decision is None or decision.target is None:
        await _refuse(scope, send, where, decision)
        return
    await _relay(scope, receive, send, where, decision.target)
