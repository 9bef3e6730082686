"""A pod that serves HTTP and a websocket (tests/pod_server.py, a real process) and a
running workload whose run says its port `web` listens there."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from benchmarks.agent_stack import free_port, wait_for
from scheduler_core.models import PodRun
from scheduler_core.models.agents import PodRunState
from tests import factories

POD_SERVER = Path(__file__).resolve().parents[1] / "pod_server.py"


@pytest.fixture(scope="module")
def pod_port() -> Iterator[int]:
    """The port of a real pod server process."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(POD_SERVER), str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        wait_for(lambda: "serving" in process.stdout.readline(), 15, "the pod server")
        yield port
    finally:
        process.terminate()
        process.wait(10)


def running_with_port(cluster, *, port: int, host: str = "127.0.0.1", name: str = "nb"):
    """A running workload of `vision` with port `web`, listening at host:port."""
    node = cluster["nodes"][0]
    spec = {"command": "serve", "ports": [{"name": "web"}]}
    workload = factories.running_workload(cluster["vision"], [node], name=name, spec=spec)
    PodRun.objects.create(
        workload=workload, node=node, pod_index=0, epoch=factories.n(),
        state=PodRunState.RUNNING, allocation=workload.allocations.get(),
        started_at=timezone.now(), ports=[{"name": "web", "host": host, "port": port}],
    )  # fmt: skip
    return workload
