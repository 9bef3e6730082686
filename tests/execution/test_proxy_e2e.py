"""Interactive workloads end to end: a real agent runs a pod whose command serves HTTP and
a websocket on the port its node gave it (tests/pod_server.py), and Fairway's web server
(uvicorn, `manage.py run`) proxies both to it, for the users who may see the workload."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from benchmarks.agent_stack import AgentStack, wait_for
from tests.execution.conftest import make_stack

pytestmark = [pytest.mark.services, pytest.mark.slow]

POD_SERVER = Path(__file__).resolve().parents[1] / "pod_server.py"
OUTSIDER = """
from django.contrib.auth import get_user_model
from scheduler_core.services.org import department_create, project_create, queue_owner_set_member
root = get_user_model().objects.get(username="root")
get_user_model().objects.create_user("eve", "eve@example.com", "eve-password")
lab = department_create(user=root, name="other-lab")
project = project_create(user=root, name="elsewhere", department=lab)
queue_owner_set_member(user=root, owner=project, username="eve", role="researcher")
"""


@pytest.fixture(scope="module")
def stack(product_database) -> Iterator[AgentStack]:
    """The product and one agent that says its pods are reached at 127.0.0.1."""
    var_dir = Path(tempfile.mkdtemp(prefix="fairway-proxy-"))
    var_dir.chmod(0o755)
    running = make_stack(product_database, var_dir, projects={"team": 2}).start()
    try:
        running.manage("shell", "-c", OUTSIDER)
        running.start_agent("node-p", 2, "--address", "127.0.0.1")
        wait_for(lambda: node_ready(running), 90, "the agent's node to be ready")
        yield running
    finally:
        running.stop()
        print(running.product_output()[-3000:])
        for name, agent in running.agents.items():
            print(f"--- agent {name}\n{agent.output[-3000:]}")


def node_ready(stack: AgentStack) -> bool:
    status, data = stack.request("GET", "/api/v1/nodes/?pool=gpu", token=stack.admin_token)
    return status == 200 and any(n["state"] == "ready" for n in data["results"])


def signed_in(stack: AgentStack, username: str, password: str) -> str:
    """The session cookie of a real sign-in on the console's page (`Cookie` header)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(stack.url + "/login/", timeout=30).read()
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    form = urllib.parse.urlencode({"username": username, "password": password,
                                   "csrfmiddlewaretoken": csrf, "next": "/"}).encode()  # fmt: skip
    referer = {"Referer": stack.url + "/login/"}
    opener.open(
        urllib.request.Request(stack.url + "/login/", data=form, headers=referer), timeout=30
    )
    session = next((c.value for c in jar if c.name == "sessionid"), None)
    assert session, f"{username} could not sign in"
    return f"sessionid={session}"


def fetch(stack: AgentStack, path: str, cookie: str | None = None, accept: str = "*/*"):
    """(status, body) of a GET that follows no redirect."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    headers = {"Accept": accept, **({"Cookie": cookie} if cookie else {})}
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(
            urllib.request.Request(stack.url + path, headers=headers), timeout=30
        ) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def open_port(stack: AgentStack, pk: int) -> dict:
    """The workload's open port, once its pod runs and its node said where it listens."""
    return wait_for(lambda: (stack.workload(pk).get("ports") or [None])[0], 90, "an open port")


def echo(stack: AgentStack, path: str, cookie: str | None) -> list:
    async def talk() -> list:
        headers = {"Cookie": cookie} if cookie else {}
        url = "ws" + stack.url[len("http") :] + path
        async with connect(url, additional_headers=headers, origin=stack.url) as ws:  # type: ignore[arg-type]
            await ws.send("hello pod")
            text = await ws.recv()
            await ws.send(b"\x00\xffbytes")
            data = await ws.recv()
            return [text, data]

    return asyncio.run(talk())


def test_a_pods_http_and_websocket_are_open_to_those_who_may_see_it(stack):
    pk = stack.submit("notebook", ["python3", str(POD_SERVER)], gpus=0, cpu=0.1,
                      spec={"ports": [{"name": "web"}]})["id"]  # fmt: skip
    port = open_port(stack, pk)
    assert port["path"] == f"/proxy/{pk}/main-0/web/" and port["host"] == "127.0.0.1"
    ada = signed_in(stack, "ada", "ada-password")
    status, body = fetch(stack, port["path"] + "hello", ada)
    assert status == 200, body
    seen = json.loads(body)
    assert seen["port"] == str(port["port"])  # FAIRWAY_PORT_WEB, given by the node
    assert seen["prefix"] == port["path"]  # FAIRWAY_PROXY_PREFIX
    assert "sessionid" not in seen["headers"].get("cookie", "")
    assert echo(stack, port["path"] + "ws", ada) == ["hello pod", b"\x00\xffbytes"]

    eve = signed_in(stack, "eve", "eve-password")  # of another department
    assert fetch(stack, port["path"], eve)[0] == 404
    assert fetch(stack, port["path"])[0] == 401
    status, _ = fetch(stack, port["path"], accept="text/html")
    assert status == 302  # to the sign-in page
    for cookie in (eve, None):
        with pytest.raises(InvalidStatus):
            echo(stack, port["path"] + "ws", cookie)

    cli = subprocess.run(
        [sys.executable, "-m", "fairway_cli", "describe", str(pk)],
        env={**os.environ, "FAIRWAY_URL": stack.url, "FAIRWAY_TOKEN": stack.token},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert f"{stack.url}/proxy/{pk}/main-0/web/" in cli.stdout
    stack.request("POST", f"/api/v1/workloads/{pk}/cancel/")


def test_a_pod_that_does_not_listen_gives_502_with_a_message(stack):
    pk = stack.submit("silent", "sleep 300", gpus=0, cpu=0.1,
                      spec={"ports": [{"name": "web"}]})["id"]  # fmt: skip
    port = open_port(stack, pk)
    status, body = fetch(stack, port["path"], signed_in(stack, "ada", "ada-password"))
    assert status == 502
    assert "pod main-0 does not answer on its port web" in body
    stack.request("POST", f"/api/v1/workloads/{pk}/cancel/")


@pytest.mark.browser
def test_the_open_link_on_the_workload_page_opens_the_pods_page(stack):
    from playwright.sync_api import sync_playwright

    from tests.console.browser.conftest import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    pk = stack.submit("lab", ["python3", str(POD_SERVER)], gpus=0, cpu=0.1,
                      spec={"ports": [{"name": "web"}]})["id"]  # fmt: skip
    open_port(stack, pk)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{stack.url}/login/?next=/workloads/{pk}/")
            page.fill("#id_username", "ada")
            page.fill("#id_password", "ada-password")
            page.click("button[type=submit]")
            link = page.get_by_role("link", name="Open web of pod main-0")
            link.wait_for(timeout=20_000)
            page.mouse.wheel(0, 380)  # the Open card (the page's live part is swapped in)
            page.wait_for_timeout(300)
            page.screenshot(path=str(SCREENSHOTS / "workload-open.png"))
            with page.expect_popup() as popup:
                link.click()
            pod_page = popup.value
            pod_page.wait_for_load_state()
            assert pod_page.url == f"{stack.url}/proxy/{pk}/main-0/web/"
            assert f"Hello from pod /proxy/{pk}/main-0/web/" in pod_page.inner_text("h1")
            echoed = pod_page.locator("#echo")
            echoed.filter(has_text="echoed: echo through the proxy").wait_for(timeout=10_000)
        finally:
            browser.close()
    stack.request("POST", f"/api/v1/workloads/{pk}/cancel/")
