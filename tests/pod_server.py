"""An interactive pod for the proxy tests: HTTP and a websocket on one port (its argument,
else FAIRWAY_PORT_WEB), under the proxy prefix Fairway gives it. Standard library only:
pods run as an unprivileged user with the system's python3.

- GET <anything>: JSON of what arrived (path, headers, its port and prefix variables), or,
  for a path ending in `/` (its prefix), an HTML page whose script echoes a message over
  the websocket at `ws` and shows it;
- a websocket (RFC 6455): every message is sent back as it came (text as text, binary as
  binary); the text `close-4321` closes it with code 4321."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import struct
import sys

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PAGE = """<!doctype html><html><head><title>Pod page</title></head><body>
<h1>Hello from pod PREFIX</h1><p id="echo">waiting</p>
<script>
const ws = new WebSocket(location.href.replace(/^http/, "ws") + "ws");
ws.onopen = () => ws.send("echo through the proxy");
ws.onmessage = (e) => { document.getElementById("echo").textContent = "echoed: " + e.data; };
</script></body></html>"""


async def read_head(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin1").split("\r\n")
    method, path = head[0].split(" ")[:2]
    headers = {}
    for line in head[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


def respond(writer: asyncio.StreamWriter, body: str, kind: str, extra: str = "") -> None:
    data = body.encode()
    writer.write(
        f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(data)}\r\n{extra}"
        "Connection: close\r\n\r\n".encode()
        + data
    )


def frame(opcode: int, payload: bytes) -> bytes:
    size = len(payload)
    if size < 126:
        return bytes([0x80 | opcode, size]) + payload
    if size < 65536:
        return bytes([0x80 | opcode, 126]) + struct.pack("!H", size) + payload
    return bytes([0x80 | opcode, 127]) + struct.pack("!Q", size) + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    first, second = await reader.readexactly(2)
    size = second & 0x7F
    if size == 126:
        size = struct.unpack("!H", await reader.readexactly(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", await reader.readexactly(8))[0]
    mask = await reader.readexactly(4) if second & 0x80 else b"\0\0\0\0"
    data = await reader.readexactly(size)
    return first & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


async def echo(reader, writer, headers: dict[str, str]) -> None:
    key = (headers["sec-websocket-key"] + GUID).encode()
    accept = base64.b64encode(hashlib.sha1(key).digest())
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )
    while True:
        opcode, data = await read_frame(reader)
        if opcode == 0x8:  # close: answer with the same code
            writer.write(frame(0x8, data[:2]))
            break
        if opcode == 0x9:  # ping
            writer.write(frame(0xA, data))
        elif opcode == 0x1 and data == b"close-4321":
            writer.write(frame(0x8, struct.pack("!H", 4321) + b"asked to"))
            break
        elif opcode in (0x1, 0x2):
            writer.write(frame(opcode, data))
        await writer.drain()


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        method, path, headers = await read_head(reader)
        if headers.get("upgrade", "").lower() == "websocket":
            await echo(reader, writer, headers)
        elif path.split("?")[0].endswith("/"):
            prefix = os.environ.get("FAIRWAY_PROXY_PREFIX", "/")
            respond(writer, PAGE.replace("PREFIX", prefix), "text/html; charset=utf-8")
        else:
            body = await reader.readexactly(int(headers.get("content-length", 0)))
            seen = {"path": path, "headers": headers, "port": os.environ.get("FAIRWAY_PORT_WEB"),
                    "prefix": os.environ.get("FAIRWAY_PROXY_PREFIX"),
                    "method": method, "body": body.decode("latin1")}  # fmt: skip
            # the pod may not set Fairway's session cookie: the proxy drops this
            stolen = "Set-Cookie: sessionid=stolen; Path=/\r\n"
            respond(writer, json.dumps(seen), "application/json", stolen)
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ["FAIRWAY_PORT_WEB"])
    server = await asyncio.start_server(serve, "0.0.0.0", port)
    print(f"serving on {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
