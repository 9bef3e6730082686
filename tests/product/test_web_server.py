"""The web processes of `manage.py run` (uvicorn) for real: the API answers a token, a signed-in
browser's websocket (/ws/events/) receives the event of a submission made over HTTP, and the
local node agent's websocket (/ws/agents/) keeps its node ready."""

from __future__ import annotations

import asyncio
import base64
import http.cookiejar
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest
import websockets
from django.conf import settings

from scheduler_core.runtime.executors.agent.local import node_name
from tests.product.processes import Product

pytestmark = pytest.mark.slow

EXTERNAL = ("DATABASE_URL", "REDIS_URL")  # without them: SQLite and the embedded Redis


@pytest.fixture
def product(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in EXTERNAL}
    env["FAIRWAY_VAR_DIR"] = str(tmp_path)
    for args in (["migrate", "-v0"], ["seed_demo", "--workloads", "2"]):
        subprocess.run(
            [sys.executable, "manage.py", *args],
            env=env,
            cwd=settings.BASE_DIR,
            check=True,
            capture_output=True,
        )
    product = Product("--local-agent", "--no-beat", env={}, var_dir=tmp_path, unset=EXTERNAL)
    try:
        product.wait_serving(timeout=90)
        yield product
    finally:
        product.stop()


def token_of(product: Product, username: str) -> str:
    basic = base64.b64encode(f"{username}:fairway-{username}".encode()).decode()
    status, _, body = product.request(
        "POST", "/api/v1/tokens/", body={"name": "web-server"}, authorization=f"Basic {basic}"
    )
    assert status == 201, body
    return str(body["key"])


def session_cookie(product: Product, username: str) -> str:
    """Sign in through the console's login form; the session cookie."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    url = f"http://127.0.0.1:{product.port}/login/"
    page = opener.open(url, timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf, page[:500]
    form = {"username": username, "password": f"fairway-{username}", "csrfmiddlewaretoken": csrf[1]}
    opener.open(
        urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST"),
        timeout=30,
    )
    cookies = {c.name: c.value for c in jar}
    assert "sessionid" in cookies, "the login form did not sign in"
    return f"sessionid={cookies['sessionid']}"


async def receive_type(ws, wanted: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        message = json.loads(
            await asyncio.wait_for(ws.recv(), timeout=max(deadline - time.monotonic(), 0.1))
        )
        if message["type"] == wanted:
            return message


def test_a_browser_websocket_sees_a_submission_made_over_the_api(product):
    token = token_of(product, "alice")
    status, _, page = product.request("GET", "/api/v1/workloads/", token=token)
    assert status == 200 and "results" in page
    cookie = session_cookie(product, "alice")

    async def watch() -> dict:
        async with websockets.connect(
            f"ws://127.0.0.1:{product.port}/ws/events/",
            additional_headers={"Cookie": cookie, "Origin": f"http://127.0.0.1:{product.port}"},
        ) as ws:
            await ws.send(json.dumps({"action": "subscribe", "groups": ["cluster"]}))
            assert (await receive_type(ws, "subscribed"))["groups"] == ["cluster"]
            submitted = await asyncio.to_thread(
                product.request,
                "POST",
                "/api/v1/workloads/",
                token=token,
                body={"project": "vision", "name": "seen-live", "gpus": 1},
            )
            assert submitted[0] == 201, submitted[2]
            while True:
                event = (await receive_type(ws, "event"))["event"]
                if event["workload_id"] == submitted[2]["id"]:
                    return event

    assert asyncio.run(watch())["type"] == "submitted"


def test_the_local_agent_keeps_its_node_ready_over_its_websocket(product):
    token = token_of(product, "admin")
    heartbeats = set()
    deadline = time.monotonic() + 60
    while len(heartbeats) < 3 and time.monotonic() < deadline:
        status, _, node = product.request("GET", f"/api/v1/nodes/{node_name()}/", token=token)
        if status == 200 and node["state"] == "ready" and node["agent_version"]:
            heartbeats.add(node["last_heartbeat"])
        time.sleep(0.5)
    assert len(heartbeats) >= 3, "the agent's heartbeats did not arrive over /ws/agents/"
