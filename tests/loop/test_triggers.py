"""Cycle requests: coalesced after commit, never lost."""

from __future__ import annotations

import pytest

from scheduler_core.loop import cycle, triggers
from scheduler_core.loop.locks import new_cycle_lock

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch, autorun_cycles):
    """Counts cycle tasks put on the queue (none actually run)."""
    calls = []
    monkeypatch.setattr(triggers, "send_cycle_task", lambda: calls.append(1))
    return calls


def test_a_burst_of_submissions_enqueues_one_cycle_until_it_starts(
    cluster, submit, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(30):
            submit("vision", f"w-{i}", gpus=1)
    assert len(sent) == 1
    triggers.cycle_task_started()  # the queued task starts: later requests need a new one
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(30, 60):
            submit("vision", f"w-{i}", gpus=1)
    assert len(sent) == 2


def test_nothing_is_enqueued_before_commit(
    cluster, submit, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submit("vision", "w", gpus=1)
    assert sent == [] and callbacks


def test_requests_while_a_cycle_runs_queue_exactly_one_follow_up(cluster, sent):
    holder = new_cycle_lock()
    assert holder.acquire()
    try:
        for _ in range(3):  # three tasks reach a busy lock
            triggers.cycle_task_started()
            assert not cycle.run_cycle().ran
        assert sent == []
    finally:
        holder.release()
    # The holder's cycle ends (as run_cycle's own `finally` does): one follow-up, once.
    assert triggers.take_follow_up()
    assert triggers.enqueue_cycle()
    assert not triggers.take_follow_up()
    assert len(sent) == 1


def test_a_cycle_that_finds_a_follow_up_request_enqueues_it_when_done(cluster, sent):
    triggers.want_follow_up()  # asked for before this cycle read the state: covered by it
    cycle.run_cycle()
    assert sent == []
    original = cycle.load_snapshot

    def load_and_get_asked(now, memo=None, **options):
        triggers.want_follow_up()  # asked for while the cycle runs
        return original(now, memo, **options)

    cycle.load_snapshot = load_and_get_asked
    try:
        cycle.run_cycle()
    finally:
        cycle.load_snapshot = original
    assert len(sent) == 1


def test_a_request_while_a_loop_runs_only_leaves_its_follow_up_mark(
    cluster, submit, sent, django_capture_on_commit_callbacks
):
    triggers.loop_started(10)
    triggers.take_follow_up()
    with django_capture_on_commit_callbacks(execute=True):
        submit("vision", "w", gpus=1)
    assert sent == [] and triggers.follow_up_wanted()  # the loop will run it
    triggers.loop_stopped()  # the loop stops, then takes the follow-up and queues a task
    assert triggers.take_follow_up() and triggers.enqueue_cycle()
    assert len(sent) == 1


def test_autorun_off_enqueues_nothing(cluster, settings, monkeypatch):
    calls = []
    monkeypatch.setattr(triggers, "send_cycle_task", lambda: calls.append(1))
    settings.SCHEDULER_AUTORUN = False
    assert not triggers.enqueue_cycle()
    assert calls == []
