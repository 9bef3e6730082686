"""A third backend, through the protocol alone: an executor registered for the backend
`fake` (as Slurm will be) gets launches and stops, observes its runs and nodes each
tick, and is never mistaken for the simulator (no simulated heartbeats, no completion on
Fairway's clock)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.models.agents import PodRunState
from scheduler_core.runtime import registry
from scheduler_core.runtime.executor import (
    Capability,
    Launch,
    LiveRun,
    NodeSeen,
    Observation,
    RunPhase,
    RunReport,
    Stop,
)
from scheduler_core.runtime.tick import tick
from scheduler_core.services.workloads import WorkloadRequest, workload_cancel, workload_submit
from tests import factories


class FakeExecutor:
    """Records what it is handed; reports what a test tells it to."""

    backend = "fake"
    capabilities = frozenset({Capability.ASSIGNS_DEVICES})

    def __init__(self) -> None:
        self.launches: list[Launch] = []
        self.stops: list[Stop] = []
        self.observed: list[LiveRun] = []
        self.reports: list[RunReport] = []
        self.nodes: dict[int, list[NodeSeen]] | None = None

    def start(self, launches: Sequence[Launch]) -> None:
        self.launches.extend(launches)

    def stop(self, stops: Sequence[Stop]) -> None:
        self.stops.extend(stops)

    def observe(self, runs: Sequence[LiveRun], now: datetime) -> Observation:
        self.observed = list(runs)
        seen = Observation(runs=self.reports, nodes=self.nodes)
        self.reports = []
        return seen


THE_FAKE = FakeExecutor()


def the_fake() -> FakeExecutor:
    return THE_FAKE


@pytest.fixture
def fake(monkeypatch, django_capture_on_commit_callbacks) -> Iterator[FakeExecutor]:
    global THE_FAKE
    THE_FAKE = FakeExecutor()
    monkeypatch.setitem(registry.EXECUTORS, "fake", f"{__name__}:the_fake")
    registry.executor_for.cache_clear()
    yield THE_FAKE
    registry.executor_for.cache_clear()


@pytest.fixture
def fake_pool(db, settings):
    settings.SIMULATED_NODES = True
    pool = factories.pool("hpc", backend="fake", grace_period=20)
    old = timezone.now() - timedelta(hours=1)
    nodes = [factories.node(pool, f"hpc-{i}", gpu_count=4, last_heartbeat=old) for i in (1, 2)]
    dept = factories.department("lab")
    team = factories.project(dept, "team")
    factories.quota(dept, pool, gpus=8)
    factories.quota(team, pool, gpus=8)
    admin = factories.user("root", superuser=True)
    return {"pool": pool, "nodes": nodes, "team": team, "admin": admin}


def _settle(capture, fn, *args, **kwargs):
    with capture(execute=True):
        return fn(*args, **kwargs)


def _submit(fake_pool, name: str, **fields) -> Workload:
    request = WorkloadRequest(
        project=fake_pool["team"], name=name, pools=[fake_pool["pool"]], **fields
    )
    return workload_submit(user=fake_pool["admin"], request=request)


def test_a_gang_is_launched_whole_and_runs_as_its_executor_observes(
    fake, fake_pool, django_capture_on_commit_callbacks
):
    settle = django_capture_on_commit_callbacks
    w = _submit(
        fake_pool, "gang", gpus=2, pods=2, min_pods=2,
        spec={"command": ["train", "--fast"], "duration": 1, "env": {"A": "1"}},
    )  # fmt: skip
    _settle(settle, run_cycle)
    w.refresh_from_db()
    assert w.status == WorkloadStatus.STARTING  # not running on Fairway's word
    (launch,) = fake.launches
    assert (launch.workload_name, launch.argv, launch.gang_size) == ("gang", ("train", "--fast"), 2)
    assert launch.grace_period == 20 and len(launch.pods) == 2
    assert sorted(p.env["RANK"] for p in launch.pods) == ["0", "1"]
    assert all(p.env["A"] == "1" for p in launch.pods)

    # a tick later than its `duration` and the heartbeat timeout: the simulator leaves
    # its runs and its nodes alone; the executor sees its live runs
    _settle(settle, tick, timezone.now() + timedelta(hours=2))
    w.refresh_from_db()
    assert w.status == WorkloadStatus.STARTING
    assert {n.state for n in Node.objects.filter(pool=fake_pool["pool"])} == {NodeState.READY}
    assert sorted(r.run_id for r in fake.observed) == sorted(p.run_id for p in launch.pods)

    now = timezone.now()
    first, second = launch.pods
    fake.reports = [
        RunReport(first.run_id, RunPhase.RUNNING, now, devices=(3, 2), external_id="job-17"),
        RunReport(second.run_id, RunPhase.RUNNING, now, external_id="job-17"),
    ]
    _settle(settle, tick)
    w.refresh_from_db()
    assert w.status == WorkloadStatus.RUNNING
    run = PodRun.objects.get(pk=first.run_id)
    assert (run.external_id, run.gpu_devices) == ("job-17", [3, 2])
    assert Allocation.objects.get(runs=run).gpu_devices == [3, 2]  # what the executor chose

    fake.reports = [RunReport(p.run_id, RunPhase.EXITED, now, exit_code=0) for p in launch.pods]
    _settle(settle, tick)
    w.refresh_from_db()
    assert w.status == WorkloadStatus.COMPLETED


def test_a_cancel_hands_a_stop_with_the_executors_id(
    fake, fake_pool, django_capture_on_commit_callbacks
):
    settle = django_capture_on_commit_callbacks
    w = _submit(fake_pool, "solo", gpus=1)
    _settle(settle, run_cycle)
    (pod,) = fake.launches[0].pods
    fake.reports = [RunReport(pod.run_id, RunPhase.RUNNING, timezone.now(), external_id="42")]
    _settle(settle, tick)
    _settle(settle, workload_cancel, user=fake_pool["admin"], workload=w)
    _settle(settle, run_cycle)
    (stop,) = fake.stops
    assert (stop.run_id, stop.external_id, stop.reason, stop.grace_period) == (
        pod.run_id, "42", "cancel", 20,
    )  # fmt: skip
    assert PodRun.objects.get(pk=pod.run_id).state == PodRunState.STOPPING


NODE_STEPS = [
    # what the executor reports of its pool -> the nodes' states after the tick
    ([("hpc-1", "ready"), ("hpc-2", "ready"), ("hpc-3", "ready")],
     {"hpc-1": "ready", "hpc-2": "ready", "hpc-3": "ready"}),
    ([("hpc-1", "cordoned"), ("hpc-2", "ready"), ("hpc-3", "ready")],
     {"hpc-1": "cordoned", "hpc-2": "ready", "hpc-3": "ready"}),
    ([("hpc-1", "ready"), ("hpc-2", "down"), ("hpc-3", "ready")],
     {"hpc-1": "ready", "hpc-2": "down", "hpc-3": "ready"}),
    ([("hpc-1", "ready"), ("hpc-2", "ready")],  # hpc-3 is gone
     {"hpc-1": "ready", "hpc-2": "ready", "hpc-3": "down"}),
]  # fmt: skip


def test_nodes_follow_what_the_executor_discovers(
    fake, fake_pool, django_capture_on_commit_callbacks
):
    pool = fake_pool["pool"]
    for seen, states in NODE_STEPS:
        fake.nodes = {
            pool.pk: [NodeSeen(name, state, gpu_count=8, gpu_model="H100") for name, state in seen]
        }
        _settle(django_capture_on_commit_callbacks, tick)
        nodes = Node.objects.filter(pool=pool)
        assert {n.name: n.state for n in nodes} == states
    assert {n.gpu_count for n in Node.objects.filter(pool=pool)} == {8}
    admin_cordoned = Node.objects.get(name="hpc-1")
    admin_cordoned.state = NodeState.CORDONED  # an admin's word, not the executor's
    admin_cordoned.save()
    _settle(django_capture_on_commit_callbacks, tick)
    assert Node.objects.get(name="hpc-1").state == NodeState.CORDONED


def test_an_executor_speaks_only_for_its_own_pools(fake, fake_pool, cluster):
    fake.nodes = {cluster["pool"].pk: [NodeSeen("intruder", "ready")]}
    tick()
    assert not Node.objects.filter(name="intruder").exists()
    assert {n.state for n in cluster["nodes"]} == {NodeState.READY}


def test_one_executors_outage_stops_no_others_tick(fake, monkeypatch, cluster):
    """Slurm unreachable: its observe fails, the simulator's runs still complete."""
    monkeypatch.setattr(
        registry, "EXECUTORS", {"fake": f"{__name__}:the_fake", **registry.EXECUTORS}
    )

    def unreachable(runs, now):
        raise ConnectionError("slurmctld does not answer")

    monkeypatch.setattr(fake, "observe", unreachable)
    factories.pool("hpc", backend="fake")
    w = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], spec={"duration": 5})
    report = tick(timezone.now() + timedelta(seconds=10))
    assert report.failed == ["fake"] and report.completed == 1
    w.refresh_from_db()
    assert w.status == WorkloadStatus.COMPLETED


def test_a_tick_asks_only_the_executors_of_backends_some_pool_has(fake, monkeypatch, cluster):
    """The cluster's pools are simulated: a registered executor without a pool is not
    asked to observe (nothing of it can exist), the simulator is."""
    monkeypatch.setitem(registry.EXECUTORS, "fake", f"{__name__}:the_fake")
    asked = []
    monkeypatch.setattr(fake, "observe", lambda runs, now: asked.append(now) or Observation())
    w = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], spec={"duration": 5})
    report = tick(timezone.now() + timedelta(seconds=10))
    assert asked == [] and report.completed == 1 and report.failed == []
    factories.pool("hpc", backend="fake")
    tick()
    assert len(asked) == 1
    w.refresh_from_db()
    assert w.status == WorkloadStatus.COMPLETED
