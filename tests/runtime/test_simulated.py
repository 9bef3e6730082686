"""Simulated runtime, checkpoints, heartbeats and usage accounting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from scheduler_core.choices import EventType, NodeState, WorkloadStatus
from scheduler_core.engine import transitions
from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Allocation, SchedulingEvent, UsageSample, Workload
from scheduler_core.runtime.executors.simulated import runs as simulated
from scheduler_core.runtime.routing import PoolRoutedBackend
from scheduler_core.runtime.tick import prune_history, tick
from scheduler_core.services.runtime import workload_complete, workload_fail
from tests import factories

pytestmark = pytest.mark.django_db


def _running(cluster, seconds_ago: float, **spec):
    w = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=2, spec=spec)
    w.started_at = timezone.now() - timedelta(seconds=seconds_ago)
    w.save()
    return w


def test_a_workload_completes_when_its_duration_is_up(cluster):
    done = _running(cluster, 11, duration=10)
    busy = _running(cluster, 5, duration=10)
    report = tick()
    assert report.completed == 1
    done.refresh_from_db()
    busy.refresh_from_db()
    assert done.status == WorkloadStatus.COMPLETED
    assert done.finished_at == done.started_at + timedelta(seconds=10)
    assert not Allocation.objects.filter(workload=done).exists()
    assert SchedulingEvent.objects.filter(workload=done, type=EventType.COMPLETED).exists()
    assert busy.status == WorkloadStatus.RUNNING


def test_a_cycle_completes_due_workloads_first_and_reuses_their_gpus(cluster, submit):
    done = _running(cluster, 30, duration=10)
    factories.running_workload(cluster["vision"], [cluster["nodes"][1]], gpus=8)
    waiting = submit("vision", "next", gpus=8)
    report = run_cycle()
    assert report.completed == 1 and report.record.details["completed"] == 1
    waiting.refresh_from_db()
    assert waiting.status == WorkloadStatus.RUNNING
    before = done.version
    done.refresh_from_db()
    assert done.status == WorkloadStatus.COMPLETED and done.version == before + 1
    assert done.finished_at == done.started_at + timedelta(seconds=10)
    assert not Allocation.objects.filter(workload=done).exists()
    event = SchedulingEvent.objects.get(workload=done, type=EventType.COMPLETED)
    assert event.reason == "finished after running 10.0 s"
    assert event.pool_id == cluster["pool"].pk


def test_a_run_cancelled_during_the_cycle_stays_cancelled(cluster):
    from scheduler_core.adapters import apply_decisions, load_snapshot
    from scheduler_core.adapters.runs import placed_runs, without_ended
    from scheduler_core.engine import run_cycle as decide
    from scheduler_core.services.workloads import workload_cancel

    done = _running(cluster, 30, duration=10)
    now = timezone.now()
    taken = load_snapshot(now)
    backend = PoolRoutedBackend(taken.pool_backends)
    runs = backend.take_ended_runs(placed_runs(taken), now)
    assert [run.workload_id for run in runs.ended] == [done.pk]
    live, ended = without_ended(taken, runs.ended)
    assert str(done.pk) not in {w.id for w in live.snapshot.workloads}
    assert str(done.pk) in {w.id for w in taken.snapshot.workloads}  # (not changed)
    workload_cancel(user=cluster["admin"], workload=done)
    outcome = apply_decisions(live, decide(live.snapshot), now=now, backend=backend, ended=ended)
    assert outcome.completed == 0
    done.refresh_from_db()
    assert done.status == WorkloadStatus.CANCELLED
    assert not SchedulingEvent.objects.filter(workload=done, type=EventType.COMPLETED).exists()


def test_a_preempted_workload_starts_over_without_checkpoints():
    now = timezone.now()
    kept = transitions.progress_kept(
        spec={"duration": 100}, progress=0, started_at=now - timedelta(seconds=55), stopped_at=now
    )
    assert kept == 0


def test_a_preempted_workload_resumes_from_its_last_checkpoint():
    now = timezone.now()
    spec = {"duration": 100, "checkpoint_every": 20}
    kept = transitions.progress_kept(
        spec=spec, progress=0, started_at=now - timedelta(seconds=55), stopped_at=now
    )
    assert kept == 40
    kept = transitions.progress_kept(
        spec=spec, progress=40, started_at=now - timedelta(seconds=10), stopped_at=now
    )
    assert kept == 40  # not yet at the next checkpoint
    due = simulated.due_at(spec=spec, progress=40, started_at=now)
    assert due == now + timedelta(seconds=60)


def test_eviction_in_a_cycle_keeps_checkpoint_progress(cluster, submit):
    from scheduler_core.services.quotas import queue_owner_set_quota

    victim = factories.running_workload(
        cluster["nlp"],
        [cluster["nodes"][0]],
        gpus=8,
        spec={"duration": 600, "checkpoint_every": 60},
    )
    victim.started_at = timezone.now() - timedelta(seconds=150)
    victim.save()
    factories.running_workload(cluster["nlp"], [cluster["nodes"][1]], gpus=8, preemptible=False)
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    submit("vision", "owner", gpus=8)
    run_cycle()
    victim.refresh_from_db()
    assert victim.status == WorkloadStatus.PENDING
    assert victim.progress_seconds == 120


def test_complete_and_fail_services_refuse_finished_workloads(cluster):
    w = _running(cluster, 1, duration=100)
    workload_complete(workload=w)
    with pytest.raises(ValidationError):
        workload_complete(workload=w)
    with pytest.raises(ValidationError):
        workload_fail(workload=w, reason="oops")
    other = _running(cluster, 1)
    failed = workload_fail(workload=other, reason="exit code 1")
    assert failed.status == WorkloadStatus.FAILED
    assert (
        SchedulingEvent.objects.get(workload=other, type=EventType.FAILED).reason == "exit code 1"
    )


def test_a_silent_node_is_marked_down_and_its_workloads_evicted(cluster, settings):
    settings.SIMULATED_NODES = False
    settings.NODE_HEARTBEAT_TIMEOUT = 60
    silent, alive = cluster["nodes"]
    silent.last_heartbeat = timezone.now() - timedelta(seconds=120)
    silent.save()
    alive.last_heartbeat = timezone.now()
    alive.save()
    w = factories.running_workload(cluster["vision"], [silent], gpus=2, backoff_limit=5)
    report = tick()
    assert report.nodes_down == ["gpu-1"]
    silent.refresh_from_db()
    alive.refresh_from_db()
    assert silent.state == NodeState.DOWN and alive.state == NodeState.READY
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING and w.restarts == 1
    event = SchedulingEvent.objects.get(workload=w, type=EventType.PREEMPTED)
    assert event.details["kind"] == "fault"


def test_simulated_nodes_stay_alive_unless_an_admin_marks_them_down(cluster, settings):
    settings.SIMULATED_NODES = True
    for node in cluster["nodes"]:
        node.last_heartbeat = timezone.now() - timedelta(days=1)
        node.save()
    cluster["nodes"][1].state = NodeState.DOWN
    cluster["nodes"][1].save()
    assert tick().nodes_down == []
    up, down = cluster["nodes"]
    up.refresh_from_db()
    down.refresh_from_db()
    assert up.state == NodeState.READY and down.state == NodeState.DOWN
    assert timezone.now() - up.last_heartbeat < timedelta(seconds=5)


def test_a_cycle_records_usage_per_queue_per_pool_once_per_interval(cluster, settings):
    settings.USAGE_SAMPLE_INTERVAL = 60
    factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=4)
    factories.running_workload(cluster["infra"], [cluster["nodes"][1]], gpus=2)
    run_cycle()
    samples = {
        (s.project.name if s.project else s.department.name): s.gpu_seconds
        for s in UsageSample.objects.select_related("project", "department")
    }
    assert samples == {"vision": 240, "infra": 120, "research": 240, "ops": 120}
    run_cycle()  # within the interval: nothing new
    assert UsageSample.objects.count() == 4
    later = timezone.now() + timedelta(seconds=61)
    run_cycle(now=later)
    assert UsageSample.objects.count() == 8
    assert Workload.objects.filter(status=WorkloadStatus.RUNNING).count() == 2


def test_housekeeping_drops_old_cycle_records_and_idempotency_keys(cluster, settings):
    from scheduler_core.models import CycleRecord, IdempotencyKey

    now = timezone.now()
    settings.CYCLE_RECORD_RETENTION = 3600
    settings.IDEMPOTENCY_KEY_RETENTION = 3600
    CycleRecord.objects.create(started_at=now - timedelta(hours=2), duration_seconds=0.1)
    CycleRecord.objects.create(started_at=now, duration_seconds=0.1)
    old = IdempotencyKey.objects.create(
        user=cluster["researcher"], key="old", request_hash="x", response_status=201,
        response_body={},
    )  # fmt: skip
    IdempotencyKey.objects.filter(pk=old.pk).update(created_at=now - timedelta(hours=2))
    IdempotencyKey.objects.create(
        user=cluster["researcher"], key="new", request_hash="x", response_status=201,
        response_body={},
    )  # fmt: skip
    prune_history(now)
    assert CycleRecord.objects.count() == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["new"]
