"""An agent pool without agents: start and signal messages are captured (instead of being
handed to the channel layer) and agents' reports are made by calling
runtime.agent.reports directly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.utils import timezone

from scheduler_core.choices import Backend
from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import PodRun
from scheduler_core.models.agents import LIVE_RUN_STATES
from scheduler_core.runtime.executors.agent import channel, reports
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests import factories


@dataclass(frozen=True)
class Sent:
    node_id: int
    type: str
    body: dict[str, Any]


class Agents:
    """The fake agents' side: what the server sent them, and their reports."""

    def __init__(self, capture) -> None:
        self.sent: list[Sent] = []
        self._capture = capture

    def settle(self, fn, *args, **kwargs):
        """Call `fn` and run what it left for after commit (messages, reconciles)."""
        with self._capture(execute=True):
            return fn(*args, **kwargs)

    def cycle(self):
        return self.settle(run_cycle)

    def starts(self, since: int = 0) -> list[Sent]:
        return [m for m in self.sent[since:] if m.type == "start"]

    def signals(self, since: int = 0) -> list[Sent]:
        return [m for m in self.sent[since:] if m.type == "signal"]

    def report(self, run: PodRun, state: str, *, exit_code=None, signal=None, reason=None,
               epoch=None, node=None) -> None:  # fmt: skip
        self.settle(
            reports.run_reported, node=node or run.node, run_id=run.pk,
            epoch=run.epoch if epoch is None else epoch, state=state, exit_code=exit_code,
            signal=signal, reason=reason, at=timezone.now(),
        )  # fmt: skip

    def hello(self, node, runs: list[dict[str, Any]]) -> list[int]:
        return self.settle(reports.agent_hello, node=node, runs=runs)


@pytest.fixture
def agents(monkeypatch, django_capture_on_commit_callbacks) -> Agents:
    fake = Agents(django_capture_on_commit_callbacks)
    monkeypatch.setattr(
        channel, "send_many", lambda messages: fake.sent.extend(Sent(*m) for m in messages)
    )
    return fake


@pytest.fixture
def agent_cluster(db):
    """An agent pool (grace period 10 s) of three 4-GPU nodes with addresses; a
    department with projects `vision` (quota 8) and `nlp` (quota 0)."""
    pool = factories.pool("metal", backend=Backend.AGENT, grace_period=10)
    nodes = [
        factories.node(pool, f"host-{i}", gpu_count=4, address=f"10.0.0.{i}",
                       last_heartbeat=timezone.now())
        for i in (1, 2, 3)
    ]  # fmt: skip
    dept = factories.department("research")
    vision = factories.project(dept, "vision")
    nlp = factories.project(dept, "nlp")
    factories.quota(dept, pool, gpus=12)
    factories.quota(vision, pool, gpus=8)
    factories.quota(nlp, pool, gpus=0)
    return {
        "pool": pool, "nodes": nodes, "dept": dept, "vision": vision, "nlp": nlp,
        "admin": factories.user("admin", superuser=True),
    }  # fmt: skip


@pytest.fixture
def submit(agent_cluster):
    def _submit(name: str, gpus: float = 1, project: str = "vision", **fields):
        request = WorkloadRequest(
            project=agent_cluster[project], name=name, gpus=gpus, pools=[agent_cluster["pool"]],
            **fields,
        )  # fmt: skip
        return workload_submit(user=agent_cluster["admin"], request=request)

    return _submit


def assert_no_device_held_twice() -> None:
    """The invariant of reconcile: no GPU device of a node is held by two live runs
    beyond a whole device."""
    held: dict[tuple[int, int], float] = {}
    for run in PodRun.objects.filter(state__in=LIVE_RUN_STATES):
        for device in run.gpu_devices:
            key = (run.node_id, device)
            held[key] = held.get(key, 0.0) + run.gpu_fraction
    over = {key: share for key, share in held.items() if share > 1 + 1e-9}
    assert not over, f"devices held by more than one live run: {over}"


def runs_of(workload) -> list[PodRun]:
    return list(PodRun.objects.filter(workload=workload).order_by("pk"))
