"""A workload on an agent pool: starting, running, completed or failed as its agents
report (docs/agent.md, "Workload lifecycle")."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.models import Allocation, SchedulingEvent, Workload
from scheduler_core.models.agents import PodRunState
from scheduler_core.runtime.executors.agent import reports
from scheduler_core.services.workloads import workload_cancel
from tests.runtime.agent.conftest import assert_no_device_held_twice, runs_of


def _reload(w):
    w.refresh_from_db()
    return w


def test_a_workload_starts_runs_and_completes_as_its_agent_reports(agents, submit):
    w = submit("train", gpus=1, pods=2, spec={"command": ["python", "train.py"], "env": {"A": "1"}})
    agents.cycle()
    assert _reload(w).status == WorkloadStatus.STARTING
    runs = runs_of(w)
    assert [r.state for r in runs] == [PodRunState.STARTING] * 2
    starts = agents.starts()
    assert sorted(m.body["run"] for m in starts) == sorted(r.pk for r in runs)
    body = starts[0].body
    assert body["argv"] == ["python", "train.py"] and body["shell"] is None
    assert body["env"]["A"] == "1" and body["grace_period"] == 10
    assert body["checkpoint_key"] == "vision/train"

    agents.report(runs[0], "running")
    assert _reload(w).status == WorkloadStatus.STARTING  # one pod of two runs
    agents.report(runs[1], "running")
    assert _reload(w).status == WorkloadStatus.RUNNING

    agents.report(runs[0], "exited", exit_code=0)
    assert _reload(w).status == WorkloadStatus.RUNNING
    agents.report(runs[1], "exited", exit_code=0)
    assert _reload(w).status == WorkloadStatus.COMPLETED
    assert not Allocation.objects.filter(workload=w).exists()
    assert SchedulingEvent.objects.filter(workload=w, type=EventType.COMPLETED).exists()


def test_pods_on_one_node_get_disjoint_devices(agents, submit, agent_cluster):
    first = submit("a", gpus=2)
    second = submit("b", gpus=2)
    agents.cycle()
    starts = agents.starts()
    assert len(starts) == 2
    by_node: dict[int, list[int]] = {}
    for m in starts:
        by_node.setdefault(m.node_id, []).extend(m.body["gpus"])
    for devices in by_node.values():
        assert len(devices) == len(set(devices))
    assert {r.workload_id for r in runs_of(first) + runs_of(second)} == {first.pk, second.pk}
    assert_no_device_held_twice()


def test_a_gangs_start_messages_carry_every_peer_and_its_rank(agents, submit, agent_cluster):
    w = submit("gang", gpus=4, pods=3, spec={"command": "torchrun train.py"})
    agents.cycle()
    starts = agents.starts()
    assert len(starts) == 3
    envs = [m.body["env"] for m in starts]
    assert sorted(int(e["RANK"]) for e in envs) == [0, 1, 2]
    peers = envs[0]["FAIRWAY_PEERS"].split(",")
    assert len(peers) == 3
    assert {p.split(":")[0] for p in peers} == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}
    for e in envs:
        assert e["FAIRWAY_PEERS"] == envs[0]["FAIRWAY_PEERS"]
        assert e["WORLD_SIZE"] == e["FAIRWAY_WORLD_SIZE"] == "3"
        assert e["MASTER_ADDR"] == peers[0].split(":")[0]
        assert e["FAIRWAY_COORDINATOR"] == peers[0]
        assert e["LOCAL_RANK"] == "0"  # one pod per node
        assert e["FAIRWAY_WORKLOAD"] == "gang" and e["FAIRWAY_PROJECT"] == "vision"
    assert all(m.body["shell"] == "torchrun train.py" for m in starts)
    assert _reload(w).status == WorkloadStatus.STARTING


def test_a_failing_run_is_retried_while_the_backoff_limit_allows(agents, submit):
    w = submit("flaky", gpus=1, backoff_limit=1)
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "running")
    agents.report(run, "exited", exit_code=3)
    w = _reload(w)
    assert w.status == WorkloadStatus.PENDING and w.restarts == 1
    assert "exited with code 3" in w.pending_reason and "host-" in w.pending_reason
    assert "starting again in 10 s" in w.pending_reason

    agents.cycle()  # it backs off: not started again before its retry time
    assert len(runs_of(w)) == 1 and _reload(w).status == WorkloadStatus.PENDING
    Workload.objects.filter(pk=w.pk).update(retry_at=timezone.now() - timedelta(seconds=1))
    agents.cycle()
    run = runs_of(w)[-1]
    assert run.state == PodRunState.STARTING and len(runs_of(w)) == 2
    agents.report(run, "exited", exit_code=3)
    w = _reload(w)
    assert w.status == WorkloadStatus.FAILED
    failed = SchedulingEvent.objects.get(workload=w, type=EventType.FAILED)
    assert "exited with code 3" in failed.reason and "backoff limit 1" in failed.reason


def test_a_pod_that_cannot_start_fails_its_workload_with_the_reason(agents, submit):
    w = submit("typo", gpus=1, backoff_limit=0, spec={"command": ["foo"]})
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "start_failed", reason="command not found: foo")
    assert _reload(w).status == WorkloadStatus.FAILED
    failed = SchedulingEvent.objects.get(workload=w, type=EventType.FAILED)
    assert "could not start: command not found: foo" in failed.reason


def test_a_failed_pod_stops_its_peers(agents, submit):
    w = submit("pair", gpus=4, pods=2)
    agents.cycle()
    first, second = runs_of(w)
    agents.report(first, "running")
    agents.report(second, "running")
    mark = len(agents.sent)
    agents.report(first, "exited", exit_code=1)
    (signal,) = agents.signals(mark)
    assert signal.body == {"run": second.pk, "reason": "failed-peer", "grace_period": 10}
    agents.report(second, "exited", exit_code=143, signal="SIGTERM")
    w = _reload(w)
    assert w.status == WorkloadStatus.PENDING and w.restarts == 1  # one failure, counted once


def test_repeated_late_and_foreign_reports_change_nothing(agents, submit, agent_cluster):
    w = submit("solo", gpus=1)
    agents.cycle()
    (run,) = runs_of(w)
    other = next(n for n in agent_cluster["nodes"] if n.pk != run.node_id)
    agents.report(run, "exited", exit_code=1, node=other)  # another node's agent
    agents.report(run, "exited", exit_code=1, epoch=run.epoch + 7)  # a stale epoch
    assert _reload(w).status == WorkloadStatus.STARTING
    agents.report(run, "running")
    agents.report(run, "exited", exit_code=0)
    assert _reload(w).status == WorkloadStatus.COMPLETED
    agents.report(run, "exited", exit_code=1)  # a repeat with another code
    agents.report(run, "running")  # late
    w = _reload(w)
    assert w.status == WorkloadStatus.COMPLETED and w.restarts == 0
    run.refresh_from_db()
    assert (run.state, run.exit_code) == (PodRunState.EXITED, 0)


def test_cancelling_a_running_workload_signals_its_pods(agents, submit, agent_cluster):
    w = submit("stopme", gpus=1)
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "running")
    mark = len(agents.sent)
    agents.settle(workload_cancel, user=agent_cluster["admin"], workload=w)
    agents.cycle()  # the cancel asked for one; its commit reconciles
    (signal,) = agents.signals(mark)
    assert signal.body["run"] == run.pk and signal.body["reason"] == "cancel"
    run.refresh_from_db()
    assert run.state == PodRunState.STOPPING and run.stop_sent_at is not None
    agents.cycle()
    assert agents.signals(mark) == [signal]  # told once
    agents.report(run, "exited", exit_code=143, signal="SIGTERM")
    assert _reload(w).status == WorkloadStatus.CANCELLED


def test_an_image_waits_with_the_reason_where_no_node_runs_containers(
    agents, submit, agent_cluster
):
    first, *others = agent_cluster["nodes"]
    first.labels = {"containers": "false"}  # an admin says so
    first.save()
    for node in others:  # their agents said so in hello
        node.capabilities = {"containers": False}
        node.save()
    w = submit("boxed", gpus=1, spec={"image": "pytorch/pytorch:2.3"})
    agents.cycle()
    w = _reload(w)
    assert w.status == WorkloadStatus.PENDING
    assert "containers=true" in w.pending_reason
    assert runs_of(w) == [] and agents.starts() == []


def test_time_based_usage_is_charged_once_processes_run(agents, submit, settings):
    from scheduler_core.models import UsageSample

    settings.USAGE_SAMPLE_INTERVAL = 60
    w = submit("charged", gpus=2)
    agents.cycle()  # placed: starting, nothing runs yet
    assert not UsageSample.objects.filter(project_id=w.project_id, gpu_seconds__gt=0).exists()
    for run in runs_of(w):
        agents.report(run, "running")
    assert _reload(w).status == WorkloadStatus.RUNNING
    agents.settle(run_cycle_at, timezone.now() + timedelta(seconds=61))
    charged = UsageSample.objects.filter(project_id=w.project_id, gpu_seconds__gt=0)
    assert [round(s.gpu_seconds) for s in charged] == [2 * 60]  # 2 GPUs, one interval


def run_cycle_at(now):
    from scheduler_core.loop.cycle import run_cycle

    return run_cycle(now=now)


def _reports_together(agents, runs, states) -> int:
    """Each run's reports `states` (`running`, `exited`) reaching the server together, as
    frames that arrive while earlier ones are stored do; returns the queries they took."""
    node = runs[0].node
    batch = [
        reports.RunState(
            run=r.pk, epoch=r.epoch, state=state, exit_code=0 if state == "exited" else None,
            signal=None, reason=None, at=timezone.now(),
        )
        for r in runs
        for state in states
    ]  # fmt: skip
    with CaptureQueriesContext(connection) as queries:
        agents.settle(reports.runs_reported, node=node, states=batch)
    return len(queries)


def test_reports_that_arrive_together_are_stored_together(agents, submit, agent_cluster):
    """A batch of reports takes the same queries however many runs it is about: one
    transaction, each step done for every run at once; every workload still runs, then
    completes, with its own events."""
    node = agent_cluster["nodes"][0]
    few = [submit(f"few-{i}") for i in range(1)]
    many = [submit(f"many-{i}") for i in range(3)]
    agents.cycle()
    on_node = [r for w in few + many for r in runs_of(w) if r.node_id == node.pk]
    runs_few = [r for r in on_node if r.workload_id in {w.pk for w in few}]
    runs_many = [r for r in on_node if r.workload_id in {w.pk for w in many}]
    assert len(runs_few) == 1 and len(runs_many) == 3  # the first node takes four pods

    assert _reports_together(agents, runs_many, ["running"]) == _reports_together(
        agents, runs_few, ["running"]
    )
    assert all(_reload(w).status == WorkloadStatus.RUNNING for w in few + many)
    assert _reports_together(agents, runs_many, ["exited"]) == _reports_together(
        agents, runs_few, ["exited"]
    )
    for w in few + many:
        assert _reload(w).status == WorkloadStatus.COMPLETED
        types = list(
            SchedulingEvent.objects.filter(workload=w).order_by("pk").values_list("type", flat=True)
        )
        assert types.count(EventType.RUNNING) == 1 and types[-1] == EventType.COMPLETED
    assert not Allocation.objects.filter(workload__in=few + many).exists()
