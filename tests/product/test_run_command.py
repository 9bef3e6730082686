"""README command 1 for real: `manage.py run` starts embedded Redis, the web server, a
worker and beat as separate processes; the console and admin answer; Ctrl-C stops them all,
also when a script started it in the background (which starts it with SIGINT ignored), the
worker's scheduling loop after its current cycle."""

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from scheduler_core.management.commands.run import STOP_SECONDS
from tests.product.processes import Product

pytestmark = pytest.mark.slow

EXTERNAL = ("DATABASE_URL", "REDIS_URL")  # without them: SQLite and the embedded Redis


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def cycles_run(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database, timeout=5)) as db:
        return db.execute("SELECT count(*) FROM scheduler_core_cyclerecord").fetchone()[0]


def wait_for_a_cycle(database: Path, after: int, timeout: float = 60.0) -> None:
    """Until the worker has run a scheduling cycle (its loop then lingers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cycles_run(database) > after:
            return
        time.sleep(0.2)
    raise AssertionError(f"no scheduling cycle in {timeout:g} s")


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
    seeded = cycles_run(tmp_path / "fairway.sqlite3")  # seed_demo runs some itself
    # the worker's scheduling loop waits a minute for requests: still running when stopped
    product = Product(
        env={"SCHEDULER_LOOP_LINGER": "60", "SCHEDULER_LOOP_SECONDS": "60"},
        var_dir=tmp_path,
        unset=EXTERNAL,
        sigint_ignored=True,
    )
    port, proc = product.port, product.process
    try:
        # the banner comes once the web server answers and the local agent has started
        product.wait_serving(timeout=60)
        assert get(f"http://127.0.0.1:{port}/login/")[0] == 200
        assert get(f"http://127.0.0.1:{port}/admin/login/")[0] == 200
        wait_for_a_cycle(tmp_path / "fairway.sqlite3", after=seeded)
    finally:
        proc.send_signal(signal.SIGINT)
        asked = time.monotonic()
        proc.wait(timeout=30)
    stopped_in = time.monotonic() - asked
    out = product.output
    assert proc.returncode == 0, out
    assert "embedded Redis" in out
    assert "Fairway is running" in out
    # the loop ended after its cycle, the worker stopped cleanly: not killed after
    # STOP_SECONDS, no task lost
    assert stopped_in < STOP_SECONDS, out
    stopping = out.split("stopping…", 1)[-1]
    assert "Traceback" not in stopping and "WorkerLostError" not in stopping, stopping
    # nothing it started is left listening
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
