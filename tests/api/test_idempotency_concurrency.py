"""Idempotency-Key under concurrent retries: ten identical requests sent at once create one
workload, and every one of them gets the same 201.

Real concurrency needs real database connections: on SQLite, a threaded WSGI server in a
process of its own over a file database (the test database is a shared in-memory one,
where concurrent writers fail instead of waiting); on PostgreSQL (DATABASE_URL), threads
in this process against the test database."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from scheduler_core.models import Workload
from scheduler_core.services import workloads as workload_services
from tests import factories

ROOT = Path(__file__).resolve().parents[2]
PARALLEL = 10
BODIES = {
    "/api/v1/workloads/": {"project": "vision", "name": "once", "gpus": 1},
    "/api/v1/workloads/bulk/": {"workloads": [{"project": "vision", "name": "twice", "gpus": 1}]},
}

SERVER = """
import os, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from scheduler_core.services.tokens import token_create
from tests import factories
pool = factories.pool("a100")
factories.node(pool, "gpu-1")
vision = factories.project(factories.department("research"), "vision")
factories.quota(vision, pool, gpus=8)
print(token_create(user=factories.researcher(vision, "alice"), name="t")[1], flush=True)
from django.core.servers.basehttp import WSGIRequestHandler, run
from django.core.wsgi import get_wsgi_application
WSGIRequestHandler.log_message = lambda *args: None
run("127.0.0.1", int(sys.argv[1]), get_wsgi_application(), threading=True)
"""


def _in_parallel(send: Callable[[], tuple[int, bytes, str | None]]) -> list:
    """`send` called from PARALLEL threads released at once: [(status, body, replayed)]."""
    start = threading.Barrier(PARALLEL)
    results: list = [None] * PARALLEL

    def run(i: int) -> None:
        start.wait()
        results[i] = send()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(PARALLEL)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def _assert_all_got_the_first_response(results: list) -> None:
    assert [status for status, _, _ in results] == [201] * PARALLEL, results
    # The same JSON: PostgreSQL's jsonb keeps a replayed body's keys in its own order.
    bodies = [json.loads(body) for _, body, _ in results]
    assert all(body == bodies[0] for body in bodies)
    assert sum(replayed == "true" for _, _, replayed in results) == PARALLEL - 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory):
    """(base URL, token of alice, researcher of vision) of a threaded server on SQLite."""
    tmp_path = tmp_path_factory.mktemp("sqlite-server")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(FAIRWAY_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings")
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        token = process.stdout.readline().strip()
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"no server: {process.stderr.read()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", token
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize("path", list(BODIES))
def test_parallel_retries_all_get_the_first_response_sqlite(sqlite_server, path):
    base, token = sqlite_server

    def send() -> tuple[int, bytes, str | None]:
        request = urllib.request.Request(
            base + path,
            data=json.dumps(BODIES[path]).encode(),
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Idempotency-Key": f"retry{path}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read(), response.headers["Idempotent-Replayed"]
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), None

    _assert_all_got_the_first_response(_in_parallel(send))


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", list(BODIES))
def test_parallel_retries_all_get_the_first_response_postgresql(monkeypatch, path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (run with DATABASE_URL); SQLite is tested above")
    pool = factories.pool("a100")
    factories.node(pool, "gpu-1")
    vision = factories.project(factories.department("research"), "vision")
    factories.quota(vision, pool, gpus=8)
    alice = factories.researcher(vision, "alice")
    submit = workload_services.workload_submit

    def slow_submit(**kwargs):  # inside the request's transaction: the requests overlap
        workload = submit(**kwargs)
        time.sleep(0.1)
        return workload

    monkeypatch.setattr(workload_services, "workload_submit", slow_submit)

    def send() -> tuple[int, bytes, str | None]:
        client = APIClient()
        client.force_authenticate(user=alice)
        try:
            r = client.post(path, BODIES[path], format="json", HTTP_IDEMPOTENCY_KEY="retry")
            return r.status_code, r.content, r.get("Idempotent-Replayed")
        finally:
            connection.close()

    _assert_all_got_the_first_response(_in_parallel(send))
    assert Workload.objects.count() == 1
