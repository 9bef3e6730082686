"""README command 1 for real: `manage.py run` starts embedded Redis, the web server, a
worker and beat as separate processes; the console and admin answer; Ctrl-C stops them all,
also when a script started it in the background (which starts it with SIGINT ignored)."""

import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest
from django.conf import settings

from tests.product.processes import Product

pytestmark = pytest.mark.slow

EXTERNAL = ("DATABASE_URL", "REDIS_URL")  # without them: SQLite and the embedded Redis


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_run_starts_and_stops_the_whole_product(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in EXTERNAL}
    env["FAIRWAY_VAR_DIR"] = str(tmp_path)
    manage = [sys.executable, "manage.py"]
    cwd = settings.BASE_DIR
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=cwd, check=True)
    subprocess.run(
        [*manage, "seed_demo", "--workloads", "6"],
        env=env,
        cwd=cwd,
        check=True,
        capture_output=True,
    )
    product = Product(env={}, var_dir=tmp_path, unset=EXTERNAL, sigint_ignored=True)
    port, proc = product.port, product.process
    try:
        # the banner comes once the web server answers and the local agent has started
        product.wait_serving(timeout=60)
        assert get(f"http://127.0.0.1:{port}/login/")[0] == 200
        assert get(f"http://127.0.0.1:{port}/admin/login/")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    out = product.output
    assert proc.returncode == 0, out
    assert "embedded Redis" in out
    assert "Fairway is running" in out
    # nothing it started is left listening
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
