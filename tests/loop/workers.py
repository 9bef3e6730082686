"""Real Celery worker processes for the live-scheduler integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def worker_database_url() -> str:
    """A URL of the test database this process uses (PostgreSQL)."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Worker:
    """`celery -A config worker -P solo` on a queue of its own, against the test database."""

    def __init__(self, *, queue: str, key_prefix: str, pauses: str = "", name: str = "") -> None:
        self.name = name or f"w-{uuid.uuid4().hex[:6]}"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings_test",  # reads SCHEDULER_CYCLE_PAUSES
            "DATABASE_URL": worker_database_url(),
            "SCHEDULER_CYCLE_QUEUE": queue,
            "SCHEDULER_KEY_PREFIX": key_prefix,
            "SCHEDULER_CYCLE_PAUSES": pauses,
            "PYTHONUNBUFFERED": "1",
        }
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-Q", queue,
             "-n", f"{self.name}@%h", "-l", "info", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(" ready." in line for line in self.lines):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError("worker did not start:\n" + "".join(self.lines[-40:]))

    def kill(self) -> None:
        """kill -9: no cleanup of any kind."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def output(self) -> str:
        return "".join(self.lines)


def wait_for(condition, timeout: float = 20, interval: float = 0.05, message: str = ""):
    """Poll `condition()` until it returns something truthy; return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(message or "condition not met in time")
