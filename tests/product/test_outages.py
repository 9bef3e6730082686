"""A PostgreSQL of the test's own (`bin/services`, started with its preferred port taken),
really stopped and started again under the running product: the API answers 503 with
Retry-After while it is down, and serves again once it is back."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.loop.workers import wait_for
from tests.product.processes import ROOT, Product, free_port, services

pytestmark = [pytest.mark.services, pytest.mark.slow]


@pytest.fixture(scope="module")
def run_dir():
    """Outside pytest's private temporary directory: PostgreSQL runs as its own user."""
    path = Path(tempfile.mkdtemp(prefix="fairway-services-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def taken_port():
    """A loopback port something else already listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture(scope="module")
def postgres(run_dir, taken_port):
    urls = services("start", "postgres", run_dir=run_dir, pg=taken_port, redis=free_port())
    yield urls["DATABASE_URL"]
    services("stop", run_dir=run_dir)


def test_services_start_on_another_port_when_theirs_is_taken(postgres, run_dir, taken_port):
    port = urlsplit(postgres).port
    assert port != taken_port
    # a second start, and a start after a stop, agree on the port it picked
    assert services("start", "postgres", run_dir=run_dir)["DATABASE_URL"] == postgres
    services("stop", "postgres", run_dir=run_dir)
    assert services("start", "postgres", run_dir=run_dir)["DATABASE_URL"] == postgres
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_a_database_outage_answers_503_and_the_api_comes_back(postgres, run_dir, tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": postgres,
        "FAIRWAY_VAR_DIR": str(tmp_path),
        "DJANGO_SUPERUSER_PASSWORD": "outage-admin",
    }
    env.pop("REDIS_URL", None)  # the product's own embedded Redis
    for command in (
        ["migrate", "--noinput", "-v0"],
        ["createsuperuser", "--noinput", "--username", "root", "--email", "root@example.com"],
    ):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True)
    product = Product(
        "--no-worker", "--no-beat", "--web-concurrency", "1",
        env={"DATABASE_URL": postgres, "REDIS_URL": ""}, var_dir=tmp_path,
    )  # fmt: skip
    try:
        product.wait_serving()
        token = _token(product)
        assert product.request("GET", "/api/v1/workloads/", token=token)[0] == 200

        services("stop", "postgres", run_dir=run_dir)
        status, headers, body = product.request("GET", "/api/v1/workloads/", token=token)
        assert status == 503, body
        assert int(headers["Retry-After"]) > 0
        assert body["error"] == "service_unavailable"

        services("start", "postgres", run_dir=run_dir)
        wait_for(
            lambda: product.request("GET", "/api/v1/workloads/", token=token)[0] == 200,
            timeout=30,
        )
    finally:
        product.stop()


def _token(product: Product) -> str:
    basic = "Basic " + base64.b64encode(b"root:outage-admin").decode()
    status, _, body = product.request(
        "POST", "/api/v1/tokens/", body={"name": "outage"}, authorization=basic
    )
    assert status == 201, body
    return body["key"]
