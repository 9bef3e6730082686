"""An interactive pod for the proxy tests: HTTP and a websocket on one port (its argument,
else FAIRWAY_PORT_WEB), under the proxy prefix Fairway gives it.

- GET <anything>: JSON of what arrived (path, headers), or, for a path ending in
  `/page`, an HTML page whose script echoes a message over the websocket and shows it;
- a websocket: every message is sent back as it came (text as text, binary as binary);
  the text `close-4321` closes it with code 4321."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from http import HTTPStatus

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

PAGE = """<!doctype html><html><head><title>Pod page</title></head><body>
<h1>Hello from pod PREFIX</h1><p id="echo">waiting</p>
<script>
const ws = new WebSocket(location.href.replace(/^http/, "ws").replace(/page$/, "ws"));
ws.onopen = () => ws.send("echo through the proxy");
ws.onmessage = (e) => { document.getElementById("echo").textContent = "echoed: " + e.data; };
</script></body></html>"""


def answer(connection: ServerConnection, request: Request) -> Response | None:
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return None
    if request.path.split("?")[0].endswith("/page"):
        prefix = os.environ.get("FAIRWAY_PROXY_PREFIX", "/")
        response = connection.respond(HTTPStatus.OK, PAGE.replace("PREFIX", prefix))
        del response.headers["Content-Type"]
        response.headers["Content-Type"] = "text/html; charset=utf-8"
        return response
    seen = {"path": request.path, "headers": {k.lower(): v for k, v in request.headers.raw_items()},
            "port": os.environ.get("FAIRWAY_PORT_WEB"),
            "prefix": os.environ.get("FAIRWAY_PROXY_PREFIX")}  # fmt: skip
    response = connection.respond(HTTPStatus.OK, json.dumps(seen))
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    response.headers["Set-Cookie"] = "sessionid=stolen; Path=/"  # never reaches the browser
    return response


async def echo(ws: ServerConnection) -> None:
    async for message in ws:
        if message == "close-4321":
            await ws.close(4321, "asked to")
            return
        await ws.send(message)


async def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ["FAIRWAY_PORT_WEB"])
    async with serve(echo, "0.0.0.0", port, process_request=answer) as server:
        print(f"serving on {port}", flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
