"""Real-browser tests: the ASGI app (HTTP + websockets) served by daphne in a thread of the
test process, Debian's Chromium driven by Playwright.

Why a thread and not a process: the test database (SQLite in memory, shared cache) and the
in-memory channel layer used without REDIS_URL only exist inside this process; with a real
PostgreSQL and Redis it works the same. Tests are transactional, so what the test writes is
committed and visible to the server's threads.

Playwright's sync API keeps an asyncio loop on the test thread, where Django refuses ORM
calls and `async_to_sync` (used to publish events). Everything that writes — factories,
services, scheduling cycles — therefore goes through `backend(fn)`, which runs it in a
worker thread, like a Celery worker or another user's request would.
"""

from __future__ import annotations

import copy
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots"
PASSWORD = "pw-12345678"
TIMEOUT_MS = 10_000


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/console/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _InFlight:
    """The ASGI application, counting the requests and websockets it is still serving, so a
    test's teardown can wait for them before the database is flushed (a request still
    reading while pytest-django truncates the tables deadlocks PostgreSQL)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.count = 0
        self.lock = threading.Lock()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        with self.lock:
            self.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            with self.lock:
                self.count -= 1

    def wait_idle(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while self.count and time.monotonic() < deadline:
            time.sleep(0.05)


IN_FLIGHT: _InFlight | None = None


def _sqlite_read_uncommitted(sender, connection, **kwargs) -> None:
    """Shared-cache in-memory SQLite locks whole tables; let the server's readers through."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA read_uncommitted = 1")


@pytest.fixture(scope="package")
def live_url():
    """Base URL of daphne serving config.asgi.application, for the browser tests."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from daphne.server import Server
    from twisted.internet import reactor

    from config.asgi import application

    global IN_FLIGHT
    IN_FLIGHT = _InFlight(application)
    connection_created.connect(_sqlite_read_uncommitted)
    port = _free_port()
    ready = threading.Event()
    server = Server(
        application=IN_FLIGHT,
        endpoints=[f"tcp:port={port}:interface=127.0.0.1"],
        signal_handlers=False,
        verbosity=0,
        ready_callable=ready.set,
    )
    thread = threading.Thread(target=server.run, name="daphne", daemon=True)
    thread.start()
    if not ready.wait(15):
        pytest.fail("daphne did not start")
    yield f"http://127.0.0.1:{port}"
    reactor.callFromThread(reactor.stop)
    thread.join(5)
    connection_created.disconnect(_sqlite_read_uncommitted)


@pytest.fixture(scope="package")
def browser_instance():
    """Chromium for the browser tests only: Playwright's sync API keeps an asyncio loop
    running on the test thread until it stops, which would break `async_to_sync` in every
    test after it, so it lives exactly as long as this package's tests."""
    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    # Reads in fixtures and assertions stay on the test thread (see the module docstring).
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def backend(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run `fn` in a worker thread (see the module docstring) and return its result."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the test thread
            box["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def run_cycle() -> Any:
    """One scheduling cycle, as the Celery task would run it (in a worker thread)."""
    from scheduler_core.loop.cycle import run_cycle as cycle

    return backend(cycle)


def settle() -> None:
    """Scheduling cycles until one decides nothing."""
    for _ in range(10):
        if not run_cycle().outcome.applied:
            return
    raise AssertionError("the scheduler did not settle")


def submit(cluster: dict[str, Any], project: str, name: str, gpus: int) -> None:
    """`name` submitted by the admin to `project` (a key of the cluster fixture)."""
    from scheduler_core.services.workloads import WorkloadRequest, workload_submit

    request = WorkloadRequest(project=cluster[project], name=name, gpus=gpus)
    backend(workload_submit, user=cluster["admin"], request=request)


def fill_a100_with_nlp_waiting(cluster: dict[str, Any]) -> None:
    """a100 (16 GPUs) full: vision 8, infra 8 (4 over its quota); nlp, with no quota
    (nor its department), waits with 4 GPUs."""
    from scheduler_core.models import Quota

    backend(lambda: Quota.objects.filter(project=cluster["nlp"]).delete())
    backend(lambda: Quota.objects.filter(department=cluster["dept"]).delete())
    submit(cluster, "vision", "vision-train", 8)
    submit(cluster, "infra", "infra-a", 4)
    submit(cluster, "infra", "infra-b", 4)
    settle()
    submit(cluster, "nlp", "nlp-wait", 4)
    settle()


@pytest.fixture
def live(live_url, browser_instance, transactional_db, settings):
    """A fresh cluster, and `live.page(user)` -> a Playwright page signed in as `user`."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    if "redis" in layers["default"]["BACKEND"].lower():
        # The Redis may be shared with other test runs: groups of our own.
        layers["default"].setdefault("CONFIG", {})["prefix"] = f"fw-browser-{uuid.uuid4().hex[:8]}"
    settings.CHANNEL_LAYERS = layers
    contexts = []

    class Live:
        url = live_url

        def page(
            self, username: str, *, password: str = PASSWORD, width: int = 1440, height: int = 900
        ):
            context = browser_instance.new_context(viewport={"width": width, "height": height})
            context.set_default_timeout(TIMEOUT_MS)
            contexts.append(context)
            page = context.new_page()
            page.goto(f"{live_url}/login/")
            page.fill("#id_username", username)
            page.fill("#id_password", password)
            page.click("button[type=submit]")
            page.wait_for_url(f"{live_url}/")
            return page

        def wait_live(self, page) -> None:
            """Wait until the page's websocket is subscribed."""
            page.wait_for_selector("body[data-live-ready]", state="attached")

        def screenshot(self, page, name: str) -> None:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    yield Live()
    for context in contexts:
        context.close()
    if IN_FLIGHT is not None:
        IN_FLIGHT.wait_idle()
