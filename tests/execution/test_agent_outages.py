"""Outages must not kill work (issue 35, section 1): the product with a real agent on a
PostgreSQL and a Redis of the test's own (`bin/services`), really stopped and started again
while a run goes on, and the web processes killed (their supervisor restarts them) during
the outage. The run keeps its process, finishes once, restarts 0.

The timings are short so that the test proves the mechanism in seconds: AGENT_LOST_AFTER 41
with a grace period of 3 s gives the runs a fence of 41 - 2 x 3 - 5 = 30 s
(services.agents.agent_timings); the Redis outage lasts longer than that (an agent must
stay connected through it), the PostgreSQL outage less (nothing can hear an agent without
its database: the fence is what carries a run through it, 655 s by default). A web process
killed on this shared machine takes some seconds to serve again: that time counts too."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from benchmarks.agent_stack import AgentStack, wait_for
from tests.product.processes import free_port, services

pytestmark = [pytest.mark.services, pytest.mark.slow]

LOST_AFTER = 41  # s; fence 30 s with the stack's grace period of 3 s
REDIS_OUTAGE = 36  # s, longer than the fence
POSTGRES_OUTAGE = 8  # s, within it (the web processes take seconds to come back)


@pytest.fixture(scope="module")
def run_dir() -> Iterator[Path]:
    """Outside pytest's private temporary directory: PostgreSQL runs as its own user, pods
    as `nobody` when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="fairway-outage-"))
    path.chmod(0o755)
    yield path
    services("stop", run_dir=path / "services")
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(run_dir) -> Iterator[AgentStack]:
    urls = services("start", run_dir=run_dir / "services", pg=free_port(), redis=free_port())
    env = {
        "DATABASE_URL": urls["DATABASE_URL"], "REDIS_URL": urls["REDIS_URL"],
        "AGENT_HEARTBEAT_INTERVAL": "1", "AGENT_USAGE_INTERVAL": "2",
        "AGENT_UNREACHABLE_AFTER": "4", "AGENT_LOST_AFTER": str(LOST_AFTER),
    }  # fmt: skip
    running = AgentStack(var_dir=run_dir / "var", env=env, web=2).start()
    try:
        running.start_agent("node-a", gpus=1)
        yield running
    finally:
        running.stop()
        print(running.product_output()[-4000:])
        for name, agent in running.agents.items():
            print(f"--- agent {name}\n{agent.output[-3000:]}")


def kill_web_processes(stack: AgentStack) -> list[int]:
    """SIGKILL the product's web processes (uvicorn); its supervisor starts them again."""
    assert stack.product is not None
    children = subprocess.run(
        ["pgrep", "-P", str(stack.product.process.pid), "-f", "config.web_process"],
        capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)
    return [int(pid) for pid in children]


def outage(stack: AgentStack, run_dir: Path, service: str, seconds: float) -> None:
    services("stop", service, run_dir=run_dir / "services")
    try:  # the service comes back even when the restart fails (the next tests need it)
        time.sleep(seconds / 2)
        assert kill_web_processes(stack), "no web process to restart"
        time.sleep(seconds / 2)
    finally:
        services("start", service, run_dir=run_dir / "services")


def runs_of(stack: AgentStack, pk: int) -> list[tuple]:
    with psycopg.connect(stack.env["DATABASE_URL"]) as conn:
        return conn.execute(
            "select state, exit_code, reason from scheduler_core_podrun where workload_id = %s",
            (pk,),
        ).fetchall()


@pytest.mark.parametrize(
    ("service", "seconds"), [("redis", REDIS_OUTAGE), ("postgres", POSTGRES_OUTAGE)]
)
def test_a_run_keeps_its_process_through_an_outage_and_a_web_restart(
    stack, run_dir, service, seconds
):
    wait_for(lambda: stack.request("GET", "/api/v1/nodes/?pool=gpu", token=stack.admin_token)[0]
             == 200 and "node-a" in str(stack.request("GET", "/api/v1/nodes/?pool=gpu",
                                                      token=stack.admin_token)[1]),
             60, "node-a to register")  # fmt: skip
    script = f'echo "started pid=$$"; sleep {seconds + 12}; echo "finished pid=$$"'
    pk = stack.submit(f"through-{service}", script, gpus=1)["id"]
    stack.wait_status(pk, "running", timeout=60)
    time.sleep(2)

    outage(stack, run_dir, service, seconds)

    done = stack.wait_status(pk, "completed", "failed", "pending", timeout=90)
    assert done["status"] == "completed", (done, runs_of(stack, pk))
    assert done["restarts"] == 0
    assert [run[:2] for run in runs_of(stack, pk)] == [("exited", 0)]  # one process, once
    text = stack.logs(pk)["pods"][0]["text"]
    started = re.findall(r"started pid=(\d+)", text)
    assert started and started == re.findall(r"finished pid=(\d+)", text), text
