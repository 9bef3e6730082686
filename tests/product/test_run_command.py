"""README command 1 for real: `manage.py run` starts embedded Redis, the web server, a
worker and beat as separate processes; the console and admin answer; Ctrl-C stops them all."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_run_starts_and_stops_the_whole_product(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
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
    port = free_port()
    proc = subprocess.Popen(
        [*manage, "run", "--port", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []

    def read_output() -> None:
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            try:
                status, _ = get(f"http://127.0.0.1:{port}/login/")
                break
            except OSError:
                time.sleep(0.3)
        assert status == 200, "console login page did not answer"
        assert get(f"http://127.0.0.1:{port}/admin/login/")[0] == 200
        # the banner comes once the web server answers and the local agent has started
        while time.monotonic() < deadline and not any("Fairway is running" in x for x in lines):
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        reader.join(timeout=10)
    out = "".join(lines)
    assert proc.returncode == 0, out
    assert "embedded Redis" in out
    assert "Fairway is running" in out
    # nothing it started is left listening
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
