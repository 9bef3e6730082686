"""A whole Fairway with real node agents, as separate processes: `manage.py run` (web,
worker, beat, embedded Redis unless REDIS_URL is set) on a free port, a cluster made
through the services (an agent pool, a project with a quota, a researcher with an API
token, a join token), and `fairway-agent` processes with fake GPUs that register and run
what the scheduler places. Used by the end-to-end tests (tests/execution/) and the agent
benchmark (benchmarks/agent_bench.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SETUP = """
import json
from django.contrib.auth import get_user_model
from scheduler_core.services.agents import join_token_create
from scheduler_core.services.cluster import pool_create
from scheduler_core.services.org import department_create, project_create, queue_owner_set_member
from scheduler_core.services.quotas import queue_owner_set_quota
from scheduler_core.services.tokens import token_create

User = get_user_model()
root = User.objects.create_superuser("root", "root@example.com", "root-password")
ada = User.objects.create_user("ada", "ada@example.com", "ada-password")
# KAI's exact rules: the end-to-end tests assert its reclaims and re-runs step by step
pool = pool_create(user=root, name="gpu", backend="agent", grace_period=GRACE, profile="kai")
dept = department_create(user=root, name="lab")
queue_owner_set_quota(user=root, owner=dept, pool=pool, gpus=sum(PROJECTS.values()))
for name, gpus in PROJECTS.items():
    project = project_create(user=root, name=name, department=dept)
    queue_owner_set_quota(user=root, owner=project, pool=pool, gpus=gpus)
    queue_owner_set_member(user=root, owner=project, username="ada", role="researcher")
_, api_token = token_create(user=ada, name="e2e")
_, admin_token = token_create(user=root, name="e2e")
_, join = join_token_create(pool=pool, by=root, description="e2e")
print("SETUP " + json.dumps({"token": api_token, "admin_token": admin_token, "join": join}))
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    check: Callable[[], Any], timeout: float = 10.0, what: str = "condition", interval: float = 0.2
) -> Any:
    """The first truthy value of `check()` within `timeout` seconds (asked every
    `interval`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class Process:
    """A child process whose output is collected (and kept for failure messages)."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        self.cmd = cmd
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def stop(self, timeout: float = 30) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass
class AgentStack:
    """The product and its agents under `var_dir`; `env` adds to this environment
    (DATABASE_URL of a database of the caller's own, AGENT_* timings, ...)."""

    var_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    projects: dict[str, float] = field(default_factory=lambda: {"team": 16.0})  # quotas
    grace: int = 3
    web: int = 1  # web processes (agents' websockets are spread over them)
    port: int = field(default_factory=free_port)
    token: str = ""
    admin_token: str = ""
    join: str = ""
    product: Process | None = None
    agents: dict[str, Process] = field(default_factory=dict)

    def _env(self) -> dict[str, str]:
        env = {**os.environ, "FAIRWAY_VAR_DIR": str(self.var_dir), "PYTHONUNBUFFERED": "1"}
        env.pop("DJANGO_SETTINGS_MODULE", None)  # the product's own settings, as deployed
        env.update(self.env)
        return env

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self._env(),
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start(self) -> AgentStack:
        self.var_dir.mkdir(parents=True, exist_ok=True)
        self.manage("migrate", "--noinput", "-v0")
        script = SETUP.replace("GRACE", str(self.grace)).replace(
            "PROJECTS", repr(dict(self.projects))
        )
        out = self.manage("shell", "-c", script)
        setup = json.loads(out.split("SETUP ", 1)[1].splitlines()[0])
        self.token, self.admin_token, self.join = (
            setup["token"], setup["admin_token"], setup["join"],
        )  # fmt: skip
        cmd = [sys.executable, "manage.py", "run", "--port", str(self.port),
               "--web-concurrency", str(self.web), "--no-local-agent"]  # fmt: skip
        self.product = Process(cmd, self._env())
        wait_for(lambda: "Fairway is running" in self.product_output() or self._dead(),
                 120, "the product to start")  # fmt: skip
        if self._dead():
            raise RuntimeError("the product did not start:\n" + self.product_output()[-4000:])
        return self

    def _dead(self) -> bool:
        return self.product is None or self.product.process.poll() is not None

    def product_output(self) -> str:
        return self.product.output if self.product else ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_agent(self, name: str, gpus: int = 2, *extra: str) -> Process:
        """`fairway-agent` for node `name` with `gpus` fake GPUs, state under var_dir."""
        state = self.var_dir / "agents" / name
        cmd = [
            sys.executable, "-m", "fairway_agent.main", "--server", self.url,
            "--join-token", self.join, "--state-dir", str(state), "--name", name,
            "--fake-gpus", str(gpus), "--checkpoint-root", str(self.var_dir / "checkpoints"),
            *extra,
        ]  # fmt: skip
        self.agents[name] = Process(cmd, self._env())
        return self.agents[name]

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        token: str | None = None,
    ) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {token or self.token}"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw.decode(errors="replace")

    def submit(self, name: str, command: list[str] | str, **fields: Any) -> dict[str, Any]:
        body = {"name": name, "project": fields.pop("project", next(iter(self.projects))),
                "pools": ["gpu"], "gpus": fields.pop("gpus", 1),
                "spec": {"command": command, **fields.pop("spec", {})}, **fields}  # fmt: skip
        status, data = self.request("POST", "/api/v1/workloads/", body)
        if status != 201:
            raise AssertionError(f"submit {name}: {status} {data}")
        return dict(data)

    def workload(self, pk: int) -> dict[str, Any]:
        status, data = self.request("GET", f"/api/v1/workloads/{pk}/")
        assert status == 200, data
        return dict(data)

    def wait_status(self, pk: int, *statuses: str, timeout: float = 60) -> dict[str, Any]:
        return dict(
            wait_for(
                lambda: (w := self.workload(pk))["status"] in statuses and w,
                timeout,
                f"workload {pk} to be {' or '.join(statuses)}",
            )
        )

    def logs(self, pk: int, **params: Any) -> dict[str, Any]:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        status, data = self.request("GET", f"/api/v1/workloads/{pk}/logs/?{query}")
        assert status == 200, data
        return dict(data)

    def stop(self) -> None:
        for agent in self.agents.values():
            agent.stop(timeout=15)
        if self.product is not None:
            self.product.stop()
