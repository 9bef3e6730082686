"""One cycle in-process: decisions applied with their events, or dropped when stale."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_core.adapters.snapshot import SnapshotMemo, load_snapshot
from scheduler_core.choices import EventType, NodeState, WorkloadStatus
from scheduler_core.loop import cycle
from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Allocation, CycleRecord, QueueState, SchedulingEvent, Workload
from scheduler_core.services.quotas import queue_owner_set_quota
from scheduler_core.services.workloads import workload_cancel, workload_set_priority
from tests import factories

pytestmark = pytest.mark.django_db


def _events(workload, type):
    return list(SchedulingEvent.objects.filter(workload=workload, type=type))


def _during_cycle(monkeypatch, action):
    """Run `action` after the engine decided and before the decisions are applied."""
    real = cycle.pause

    def pause(phase):
        if phase == "before_apply":
            action()
        real(phase)

    monkeypatch.setattr(cycle, "pause", pause)


def test_a_submitted_workload_starts_with_devices_and_an_allocated_event(
    cluster, submit, django_capture_on_commit_callbacks
):
    whole = submit("vision", "train", gpus=4)
    half = submit("vision", "notebook", gpus=0.5)
    with django_capture_on_commit_callbacks() as callbacks:
        report = run_cycle()
    assert report.ran and report.record.decisions == 2
    whole.refresh_from_db()
    assert whole.status == WorkloadStatus.RUNNING and whole.started_at is not None
    assert whole.pending_reason == "" and whole.queue_position is None
    pods = list(Allocation.objects.filter(workload=whole))
    assert len(pods) == 1 and len(pods[0].gpu_devices) == 4 and pods[0].gpu_fraction == 1.0
    shared = Allocation.objects.get(workload=half)
    assert len(shared.gpu_devices) == 1 and shared.gpu_fraction == 0.5
    (event,) = _events(whole, EventType.ALLOCATED)
    assert event.pool == cluster["pool"] and event.details["gpus"] == 4
    assert callbacks, "events are published after commit"
    assert CycleRecord.objects.count() == 1


def test_pending_reason_and_position_are_written_once(cluster, submit):
    for i in range(4):
        submit("vision", f"big-{i}", gpus=8)
    first = run_cycle()
    waiting = Workload.objects.filter(status=WorkloadStatus.PENDING).order_by("queue_position")
    assert [w.queue_position for w in waiting] == [1, 2]
    assert all(w.pending_reason and w.pending_reason_kind for w in waiting)
    assert first.outcome.reasons_written == 2
    reason_events = SchedulingEvent.objects.filter(type=EventType.PENDING_REASON).count()
    assert reason_events == 2

    second = run_cycle()
    assert second.outcome.reasons_written == 0
    assert SchedulingEvent.objects.filter(type=EventType.PENDING_REASON).count() == reason_events


KEYS = ("started", "cursor")


def test_a_long_queue_is_not_rewritten_every_cycle(cluster, submit, settings):
    """Shifted positions wait for the periodic refresh; a first position never waits."""
    from django.core.cache import cache

    settings.PENDING_REASON_REFRESH = 60
    cache.delete_many([f"{settings.SCHEDULER_KEY_PREFIX}:pending-refresh:{k}" for k in KEYS])
    running = [submit("vision", f"big-{i}", gpus=8) for i in range(2)]
    for i in range(3):
        submit("vision", f"wait-{i}", gpus=8)
    assert run_cycle().outcome.reasons_written == 3  # the first cycle refreshes everything
    Workload.objects.filter(pk=running[0].pk).update(status=WorkloadStatus.COMPLETED)
    Allocation.objects.filter(workload=running[0]).delete()
    submit("vision", "late", gpus=8)
    report = run_cycle()  # wait-0 starts; the others move up one place
    positions = dict(
        Workload.objects.filter(status="pending").values_list("name", "queue_position")
    )
    assert positions["late"] == 3  # new in the queue: written at once
    assert positions["wait-1"] == 2 and positions["wait-2"] == 3  # stale until the refresh
    assert report.outcome.reasons_written == 1
    cache.delete(f"{settings.SCHEDULER_KEY_PREFIX}:pending-refresh:started")  # refresh due
    run_cycle()
    positions = dict(
        Workload.objects.filter(status="pending").values_list("name", "queue_position")
    )
    assert positions == {"wait-1": 1, "wait-2": 2, "late": 3}


def test_a_refresh_of_a_long_queue_is_spread_over_cycles(cluster, submit, settings):
    """A refresh rewrites at most PENDING_REASON_REFRESH_ROWS stale rows per cycle and
    carries on where it stopped in the next cycle."""
    from django.core.cache import cache

    settings.PENDING_REASON_REFRESH = 60
    settings.PENDING_REASON_REFRESH_ROWS = 2
    cache.delete_many([f"{settings.SCHEDULER_KEY_PREFIX}:pending-refresh:{k}" for k in KEYS])
    running = [submit("vision", f"big-{i}", gpus=8) for i in range(2)]
    for i in range(5):
        submit("vision", f"wait-{i}", gpus=8)
    run_cycle()
    Workload.objects.filter(pk=running[0].pk).update(status=WorkloadStatus.COMPLETED)
    Allocation.objects.filter(workload=running[0]).delete()
    run_cycle()  # wait-0 starts; four move up one place, stale until a refresh

    def positions():
        return dict(Workload.objects.filter(status="pending").values_list("name", "queue_position"))

    assert positions() == {"wait-1": 2, "wait-2": 3, "wait-3": 4, "wait-4": 5}
    cache.delete(f"{settings.SCHEDULER_KEY_PREFIX}:pending-refresh:started")  # refresh due
    assert run_cycle().outcome.reasons_written == 2
    assert positions() == {"wait-1": 1, "wait-2": 2, "wait-3": 4, "wait-4": 5}
    assert run_cycle().outcome.reasons_written == 2  # the sweep goes on
    assert positions() == {"wait-1": 1, "wait-2": 2, "wait-3": 3, "wait-4": 4}
    assert run_cycle().outcome.reasons_written == 0  # done until the next refresh is due


def test_queue_states_show_each_queues_figures(cluster, submit):
    submit("vision", "a", gpus=8)
    submit("nlp", "b", gpus=2)
    submit("nlp", "c", gpus=8, pods=2)
    run_cycle()
    rows = {
        (q.project or q.department).name: q
        for q in QueueState.objects.select_related("project", "department")
    }
    assert rows["vision"].allocated_gpus == 8 and rows["vision"].deserved_gpus == 8
    assert rows["vision"].running_count == 1
    assert rows["nlp"].allocated_gpus == 2 and rows["nlp"].pending_count == 1
    assert rows["nlp"].requested_gpus == 18
    assert rows["research"].allocated_gpus == 10 and rows["research"].deserved_gpus == 12
    assert rows["vision"].fairshare_gpus >= 8


def test_a_quota_change_reclaims_gpus_with_a_preempted_event(cluster, submit):
    victims = [submit("nlp", f"borrow-{i}", gpus=8) for i in range(2)]
    run_cycle()
    assert Workload.objects.filter(status=WorkloadStatus.RUNNING).count() == 2
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    submit("vision", "owner", gpus=8)
    report = run_cycle()
    assert report.outcome.by_kind["evict"] == 1
    evicted = [w for w in victims if _events(w, EventType.PREEMPTED)]
    assert len(evicted) == 1
    (event,) = _events(evicted[0], EventType.PREEMPTED)
    assert event.details["kind"] == "reclaim"
    evicted[0].refresh_from_db()
    assert evicted[0].status == WorkloadStatus.PENDING
    assert not Allocation.objects.filter(workload=evicted[0]).exists()
    assert evicted[0].restarts == 0  # a reclaim is not a fault
    # it waits again from its eviction, not from its submission
    assert evicted[0].pending_since == event.created_at


def _nlp_borrows_the_pool(cluster, submit, runs: int, gpus: int, hours: float):
    """In a pool that weighs lost work, nlp fills the pool with `runs` runs of `gpus`
    GPUs that started `hours` ago, then loses its quota: every run is over it."""
    pool = cluster["pool"]
    pool.reclaim_weighs_lost_work = True
    pool.save()
    victims = [submit("nlp", f"borrow-{i}", gpus=gpus) for i in range(runs)]
    run_cycle()
    Workload.objects.filter(pk__in=[v.pk for v in victims]).update(
        started_at=timezone.now() - timedelta(hours=hours)
    )
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=pool, gpus=0)
    return victims


def test_a_pool_that_weighs_lost_work_spares_a_long_run_and_says_why(cluster, submit):
    victims = _nlp_borrows_the_pool(cluster, submit, runs=2, gpus=8, hours=5)
    owner = submit("vision", "owner", gpus=8)
    run_cycle()
    assert not any(_events(w, EventType.PREEMPTED) for w in victims)
    owner.refresh_from_db()
    assert owner.status == WorkloadStatus.PENDING
    assert "would throw away 40.0 GPU-hours" in owner.pending_reason


def test_a_wait_that_paid_for_a_reclaim_is_stored_and_not_spent_again(cluster, submit):
    # nlp borrows the whole pool in 2-GPU runs of an hour (2 GPU-hours lost each);
    # vision's six 1-GPU workloads have waited 30 min each: 3 GPU-hours, which pays for
    # one run. The cycle stores what the wait paid on the last ones in vision's queue, so
    # the next cycle does not spend it again (the four still waiting have waited 2
    # GPU-hours, 1.5 of which paid)
    victims = _nlp_borrows_the_pool(cluster, submit, runs=8, gpus=2, hours=1)
    now = timezone.now()
    asks = [submit("vision", f"ask-{i}", gpus=1) for i in range(6)]
    Workload.objects.filter(pk__in=[a.pk for a in asks]).update(
        submitted_at=now - timedelta(minutes=30, seconds=5)
    )
    run_cycle()
    assert sum(len(_events(v, EventType.PREEMPTED)) for v in victims) == 1
    last = Workload.objects.get(pk=asks[-1].pk)
    assert last.status == WorkloadStatus.PENDING
    assert last.room_wait_since is not None and last.room_wait_since >= now
    run_cycle()
    assert sum(len(_events(v, EventType.PREEMPTED)) for v in victims) == 1
    waiting = Workload.objects.get(pk=asks[2].pk)
    assert "would throw away 2.0 GPU-hours" in waiting.pending_reason


def test_when_a_workload_s_turn_comes_its_wait_for_room_starts(cluster, submit):
    # nlp's limit keeps "more" waiting; once it is lifted the GPUs are too scattered (2
    # free on one node, 4 on the other): it waits for room from that cycle on
    pool, admin, nlp = cluster["pool"], cluster["admin"], cluster["nlp"]
    queue_owner_set_quota(user=admin, owner=nlp, pool=pool, limit_gpus=6)
    submit("nlp", "first", gpus=6)
    run_cycle()
    submit("vision", "other", gpus=4)
    more = submit("nlp", "more", gpus=6)
    run_cycle()
    more.refresh_from_db()
    assert more.pending_reason_kind == "limit" and more.room_wait_since is None
    queue_owner_set_quota(user=admin, owner=nlp, pool=pool, limit_gpus=None)
    before = timezone.now()
    run_cycle()
    more.refresh_from_db()
    assert more.pending_reason_kind == "capacity"
    assert more.room_wait_since is not None and more.room_wait_since >= before
    since = more.room_wait_since
    run_cycle()
    more.refresh_from_db()
    assert more.room_wait_since == since  # the next cycles keep when it started
    (spec,) = (w for w in load_snapshot(timezone.now()).snapshot.workloads if w.id == str(more.pk))
    assert spec.room_wait_since == since.timestamp()


def test_a_cancel_during_the_cycle_is_not_overwritten(cluster, submit, monkeypatch):
    w = submit("vision", "train", gpus=4)
    _during_cycle(monkeypatch, lambda: workload_cancel(user=cluster["admin"], workload=w))
    report = run_cycle()
    w.refresh_from_db()
    assert w.status == WorkloadStatus.CANCELLED
    assert not Allocation.objects.filter(workload=w).exists()
    assert report.record.dropped_decisions == 1 and report.record.decisions == 0
    assert not _events(w, EventType.ALLOCATED)


def test_a_node_going_down_during_the_cycle_drops_placements_on_it(cluster, submit, monkeypatch):
    w = submit("vision", "train", gpus=8)

    def node_down():
        from scheduler_core.services.cluster import node_mark_down

        for node in cluster["nodes"]:
            node_mark_down(node=node, reason="test")

    _during_cycle(monkeypatch, node_down)
    report = run_cycle()
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING
    assert report.record.dropped_decisions == 1


def test_a_dropped_eviction_keeps_others_off_the_victims_gpus(cluster, submit, monkeypatch):
    victim = factories.running_workload(cluster["nlp"], [cluster["nodes"][0]], gpus=8)
    factories.running_workload(cluster["nlp"], [cluster["nodes"][1]], gpus=8)
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    owner = submit("vision", "owner", gpus=8)
    _during_cycle(
        monkeypatch,
        lambda: [
            workload_set_priority(user=cluster["admin"], workload=w, priority=60)
            for w in Workload.objects.filter(status=WorkloadStatus.RUNNING)
        ],
    )
    report = run_cycle()
    owner.refresh_from_db()
    victim.refresh_from_db()
    assert victim.status == WorkloadStatus.RUNNING
    assert owner.status == WorkloadStatus.PENDING
    assert report.record.dropped_decisions >= 2
    # no GPU is held twice
    devices = [(a.node_id, d) for a in Allocation.objects.all() for d in a.gpu_devices]
    assert len(devices) == len(set(devices))


def test_a_reclaimed_workload_counts_it_and_the_pool_s_bound_keeps_it_running(cluster, submit):
    pool, nlp = cluster["pool"], cluster["nlp"]
    pool.max_preemptions_per_workload = 1
    pool.save()
    first = factories.running_workload(nlp, [cluster["nodes"][0]], gpus=8)
    second = factories.running_workload(nlp, [cluster["nodes"][1]], gpus=8)
    queue_owner_set_quota(user=cluster["admin"], owner=nlp, pool=pool, gpus=0)
    submit("vision", "owner", gpus=8)
    run_cycle()
    first.refresh_from_db()
    second.refresh_from_db()
    taken, kept = (first, second) if first.status == WorkloadStatus.PENDING else (second, first)
    assert (taken.status, taken.preemptions, kept.preemptions) == (WorkloadStatus.PENDING, 1, 0)
    specs = {w.id: w for w in load_snapshot(timezone.now()).snapshot.workloads}
    assert specs[str(taken.pk)].preemptions == 1
    # a workload reclaimed once already is not reclaimed again in this pool
    Workload.objects.filter(pk=kept.pk).update(preemptions=1)
    more = submit("vision", "more", gpus=4)  # within vision's fair share of 12 GPUs
    run_cycle()
    kept.refresh_from_db()
    more.refresh_from_db()
    assert kept.status == WorkloadStatus.RUNNING and more.status == WorkloadStatus.PENDING
    assert f"waiting for {kept.name} to end: it has been preempted once" in more.pending_reason


def test_a_down_node_evicts_as_a_fault_and_the_backoff_limit_fails_it(cluster):
    node = cluster["nodes"][0]
    retry = factories.running_workload(cluster["vision"], [node], gpus=2, backoff_limit=3)
    give_up = factories.running_workload(cluster["vision"], [node], gpus=2, backoff_limit=0)
    factories.workload(cluster["vision"], "x", gpus=0, status=WorkloadStatus.COMPLETED)
    node.state = NodeState.DOWN
    node.version += 1
    node.save()
    run_cycle()
    retry.refresh_from_db()
    give_up.refresh_from_db()
    assert retry.restarts == 1 and retry.status in (WorkloadStatus.PENDING, WorkloadStatus.RUNNING)
    assert _events(retry, EventType.PREEMPTED)[0].details["kind"] == "fault"
    assert give_up.status == WorkloadStatus.FAILED
    assert _events(give_up, EventType.FAILED)
    assert not Allocation.objects.filter(node=node).exists()


def test_a_cycle_writes_nothing_when_the_lock_is_taken(cluster, submit):
    from scheduler_core.loop.locks import new_cycle_lock

    submit("vision", "train", gpus=1)
    holder = new_cycle_lock()
    assert holder.acquire()
    try:
        report = run_cycle()
    finally:
        holder.release()
    assert not report.ran
    assert not CycleRecord.objects.exists()
    assert Workload.objects.get().status == WorkloadStatus.PENDING


def test_a_snapshot_left_for_later_counts_what_it_did_not_read(cluster, submit):
    for i in range(3):
        submit("vision", f"w-{i}", gpus=1)
    memo = SnapshotMemo()
    first = load_snapshot(timezone.now(), memo, new_limit=1)
    assert [w.name for w in first.workloads.values()] == ["w-0"] and first.unseen == 2
    second = load_snapshot(timezone.now(), memo, new_limit=1)  # w-0 is known: one more
    assert sorted(w.name for w in second.workloads.values()) == ["w-0", "w-1"]
    assert second.unseen == 1
    everything = load_snapshot(timezone.now())
    assert len(everything.workloads) == 3 and everything.unseen == 0


def test_a_waiting_workload_behind_the_read_mark_is_read_at_once(cluster, submit):
    """A bounded snapshot reads waiting workloads in order of submission up to a mark;
    one that appears behind the mark (its submission committed late, or it was re-queued
    or its retry time came) is read by the next snapshot all the same, and counts against
    the bound."""
    from scheduler_core.models import Workload

    for i in range(4):
        submit("vision", f"w-{i}", gpus=1)
    memo = SnapshotMemo()
    first = load_snapshot(timezone.now(), memo, new_limit=2)
    assert sorted(w.name for w in first.workloads.values()) == ["w-0", "w-1"]
    late = submit("vision", "late", gpus=1)
    Workload.objects.filter(pk=late.pk).update(
        submitted_at=Workload.objects.get(name="w-0").submitted_at
    )
    second = load_snapshot(timezone.now(), memo, new_limit=2)
    assert sorted(w.name for w in second.workloads.values()) == ["late", "w-0", "w-1", "w-2"]
    assert second.unseen == 1
    third = load_snapshot(timezone.now(), memo, new_limit=2)
    assert len(third.workloads) == 5 and third.unseen == 0
