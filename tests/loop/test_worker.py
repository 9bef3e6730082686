"""The live scheduler end to end: real PostgreSQL, Redis and Celery worker processes.

Each test starts its worker(s) on a queue of its own with its own lock and trigger keys,
against this test run's database.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection

from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.live_events import watched_groups
from scheduler_core.loop.locks import cycle_lock_is_free
from scheduler_core.loop.triggers import send_cycle_task
from scheduler_core.models import Allocation, CycleRecord, SchedulingEvent, Workload
from scheduler_core.services.quotas import queue_owner_set_quota
from scheduler_core.services.workloads import workload_cancel
from tests.loop.workers import Worker, wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres_and_redis():
    if connection.vendor != "postgresql" or not django_settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis (run with DATABASE_URL and REDIS_URL)")


@pytest.fixture
def queue(settings, autorun_cycles):
    name = f"fairway-live-{uuid.uuid4().hex[:8]}"
    settings.SCHEDULER_CYCLE_QUEUE = name
    return name


@pytest.fixture
def start_worker(queue, settings):
    workers: list[Worker] = []

    def start(pauses: str = "") -> Worker:
        worker = Worker(queue=queue, key_prefix=settings.SCHEDULER_KEY_PREFIX, pauses=pauses)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.kill()  # the test is over: nothing to finish cleanly


def _ready(*workers: Worker) -> None:
    for worker in workers:
        worker.wait_ready()


def _paused(phase: str) -> bool:
    return cache.get(f"{django_settings.SCHEDULER_KEY_PREFIX}:cycle:paused:{phase}") is not None


def _has(type: str, workload_id: int):
    return lambda events: any(e["type"] == type and e["workload_id"] == workload_id for e in events)


class _Subscribed:
    """Subscribe first, act, then collect: events sent meanwhile wait in the channel."""

    def __init__(self, groups: list[str]) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        for group in groups:
            async_to_sync(watched_groups.awatch)(group)  # as a browser's subscription counts
            async_to_sync(self.layer.group_add)(group, self.channel)

    def until(self, wanted, timeout: float = 20) -> list[dict]:
        async def collect():
            seen: list[dict] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not wanted(seen):
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise AssertionError(f"events not received in time; got {seen}")
                try:
                    message = await asyncio.wait_for(self.layer.receive(self.channel), remaining)
                except TimeoutError:
                    continue
                seen.extend(message["events"])
            return seen

        return async_to_sync(collect)()


def test_a_submission_is_allocated_and_the_browser_hears_of_it(cluster, submit, start_worker):
    worker = start_worker()
    _ready(worker)
    listener = _Subscribed([f"project-{cluster['vision'].pk}"])
    w = submit("vision", "train", gpus=4)
    events = listener.until(_has(EventType.ALLOCATED, w.pk))
    allocated = next(e for e in events if e["type"] == EventType.ALLOCATED)
    assert allocated["workload"]["status"] == WorkloadStatus.RUNNING
    assert allocated["workload"]["nodes"] and allocated["workload"]["pods"] == 1
    w.refresh_from_db()
    assert w.status == WorkloadStatus.RUNNING
    assert Allocation.objects.filter(workload=w).count() == 1


def test_a_quota_change_reclaims_and_the_victim_hears_of_it(cluster, submit, start_worker):
    worker = start_worker()
    _ready(worker)
    listener = _Subscribed([f"project-{cluster['nlp'].pk}", f"project-{cluster['vision'].pk}"])
    borrowers = [submit("nlp", f"borrow-{i}", gpus=8) for i in range(2)]
    listener.until(lambda evs: all(_has(EventType.ALLOCATED, b.pk)(evs) for b in borrowers))
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    owner = submit("vision", "owner", gpus=8)
    # Groups are sent to concurrently, so the victim's event (project-nlp) may arrive
    # after the owner's (project-vision): wait for both.
    events = listener.until(
        lambda evs: (
            _has(EventType.ALLOCATED, owner.pk)(evs)
            and any(e["type"] == EventType.PREEMPTED for e in evs)
        )
    )
    preempted = [e for e in events if e["type"] == EventType.PREEMPTED]
    assert len(preempted) == 1
    assert preempted[0]["details"]["kind"] == "reclaim"
    assert preempted[0]["workload"]["status"] == WorkloadStatus.PENDING
    assert preempted[0]["workload_id"] in {b.pk for b in borrowers}


def test_a_worker_killed_mid_cycle_leaves_the_database_as_it_was(cluster, submit, start_worker):
    worker = start_worker(pauses="before_commit=60")
    _ready(worker)
    w = submit("vision", "train", gpus=4)
    events_before = SchedulingEvent.objects.count()
    wait_for(lambda: _paused("before_commit"), message="the cycle never reached its commit")
    assert not cycle_lock_is_free()
    worker.kill()

    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING
    assert not Allocation.objects.exists()
    assert not CycleRecord.objects.exists()
    assert SchedulingEvent.objects.count() == events_before
    wait_for(cycle_lock_is_free, timeout=10, message="the dead worker's lock was not released")

    # A new worker picks up where the dead one left.
    replacement = start_worker()
    _ready(replacement)
    send_cycle_task()
    wait_for(lambda: Workload.objects.get(pk=w.pk).status == WorkloadStatus.RUNNING)


def test_two_workers_never_run_cycles_at_once(cluster, submit, start_worker):
    workers = [start_worker(pauses="before_commit=0.4"), start_worker(pauses="before_commit=0.4")]
    _ready(*workers)
    for i in range(6):
        submit("vision", f"w-{i}", gpus=1)
        send_cycle_task()  # bypass coalescing: both workers get cycle tasks
        time.sleep(0.2)
    wait_for(
        lambda: Workload.objects.filter(status=WorkloadStatus.RUNNING).count() == 6, timeout=30
    )
    wait_for(cycle_lock_is_free, timeout=10)
    spans = sorted(
        (r.started_at.timestamp(), r.started_at.timestamp() + r.duration_seconds)
        for r in CycleRecord.objects.all()
    )
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, f"cycles overlapped: {spans}"
    assert len(spans) >= 2


def test_a_cancel_during_a_cycle_is_not_overwritten(cluster, submit, start_worker):
    worker = start_worker(pauses="before_apply=3")
    _ready(worker)
    w = submit("vision", "train", gpus=4)
    wait_for(lambda: _paused("before_apply"), message="the cycle never got to apply")
    workload_cancel(user=cluster["admin"], workload=w)
    record = wait_for(lambda: CycleRecord.objects.filter(dropped_decisions__gte=1).first())
    w.refresh_from_db()
    assert w.status == WorkloadStatus.CANCELLED
    assert not Allocation.objects.filter(workload=w).exists()
    assert record.details["dropped"][0]["workload"] == str(w.pk)
    assert not SchedulingEvent.objects.filter(workload=w, type=EventType.ALLOCATED).exists()
