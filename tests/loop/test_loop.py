"""The scheduling loop a worker task runs: cycles back to back under one lock, woken by
requests and by simulated runs ending."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from scheduler_core.choices import WorkloadStatus
from scheduler_core.engine.framework import session as session_module
from scheduler_core.loop import cycle, triggers
from scheduler_core.loop.locks import new_cycle_lock
from scheduler_core.models import Workload

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch, autorun_cycles):
    """Counts cycle tasks put on the queue (none actually run)."""
    calls = []
    monkeypatch.setattr(triggers, "send_cycle_task", lambda: calls.append(1))
    triggers.take_follow_up()
    return calls


@pytest.fixture
def loop_settings(settings):
    settings.SCHEDULER_LOOP_SECONDS = 5
    settings.SCHEDULER_LOOP_WAIT = 2
    settings.SCHEDULER_LOOP_POLL = 0.01
    return settings


def test_a_request_made_during_a_cycle_runs_in_the_same_task(
    cluster, submit, sent, monkeypatch, loop_settings
):
    first = submit("vision", "first", gpus=8)
    real = cycle.pause
    calls = []

    def submit_once_during_the_cycle(phase):
        if phase == "before_apply" and not calls:
            calls.append(phase)
            submit("vision", "second", gpus=8)  # commits at once (no outer transaction)
        real(phase)

    monkeypatch.setattr(cycle, "pause", submit_once_during_the_cycle)
    reports = cycle.run_scheduling_loop(wait=False)

    assert len(reports) == 2
    assert Workload.objects.get(pk=first.pk).status == WorkloadStatus.RUNNING
    assert Workload.objects.get(name="second").status == WorkloadStatus.RUNNING
    # the submission also put a task on the queue; the loop left no follow-up behind
    assert not triggers.follow_up_wanted()


def test_a_flood_of_submissions_is_taken_in_over_short_cycles_oldest_first(
    cluster, submit, sent, loop_settings
):
    """A cycle reads at most SCHEDULER_CYCLE_NEW_WORKLOADS waiting workloads it has not
    seen (the longest waiting first); the loop runs the next cycle at once for the rest."""
    loop_settings.SCHEDULER_CYCLE_NEW_WORKLOADS = 2
    names = [f"sweep-{i}" for i in range(5)]
    for name in names:
        submit("vision", name, gpus=1)
    reports = cycle.run_scheduling_loop(wait=False)

    assert [r.record.decisions for r in reports] == [2, 2, 1]
    assert set(
        Workload.objects.filter(status=WorkloadStatus.RUNNING).values_list("name", flat=True)
    ) == set(names)
    assert not triggers.follow_up_wanted()


def test_a_cycle_that_left_alike_workloads_out_of_view_is_followed_at_once(
    cluster, submit, sent, loop_settings, monkeypatch
):
    """A sweep longer than the alike window starts in one cycle; where a cycle started
    the last one in view without letting the next ones in (CycleResult.more_alike), the
    loop runs the next cycle at once."""
    monkeypatch.setattr(session_module, "ALIKE_WINDOW", 2)
    names = [f"sweep-{i}" for i in range(5)]
    for name in names:
        submit("vision", name, gpus=1)
    asked = []

    def once(self):  # the first cycle says it left some out
        asked.append(1)
        return len(asked) == 1

    monkeypatch.setattr(session_module.Session, "more_alike", once)
    reports = cycle.run_scheduling_loop(wait=False)

    assert [r.record.decisions for r in reports] == [5, 0]
    assert set(
        Workload.objects.filter(status=WorkloadStatus.RUNNING).values_list("name", flat=True)
    ) == set(names)
    assert not triggers.follow_up_wanted()


def test_freed_gpus_are_refilled_the_moment_a_simulated_run_ends(
    cluster, submit, sent, loop_settings
):
    # Both nodes (16 GPUs) for each: the second waits for the first to end.
    a = submit("vision", "a", gpus=8, pods=2, spec={"duration": 0.4})
    b = submit("vision", "b", gpus=8, pods=2, spec={"duration": 0.4})
    reports = cycle.run_scheduling_loop()

    a.refresh_from_db()
    b.refresh_from_db()
    assert a.status == b.status == WorkloadStatus.COMPLETED
    assert len(reports) == 3  # start a; end a, start b; end b
    # b started as a ended: no idle gap waiting for a task or the beat
    assert 0 <= (b.started_at - a.finished_at).total_seconds() < 0.15


def _loop_while_submitting_late(submit, *, after: float) -> list:
    """Run a scheduling loop while another thread submits `late` (2 GPUs of nlp) `after`
    seconds in; the loop's reports."""

    def submit_soon():
        time.sleep(after)
        try:
            submit("nlp", "late", gpus=2)
        finally:
            connection.close()  # this thread's own connection

    helper = threading.Thread(target=submit_soon)
    helper.start()
    try:
        return cycle.run_scheduling_loop()
    finally:
        helper.join()


def test_a_request_wakes_a_loop_that_waits_for_a_run(cluster, submit, sent, loop_settings):
    long = submit("vision", "long", gpus=8, spec={"duration": 1.2})
    reports = _loop_while_submitting_late(submit, after=0.3)
    late = Workload.objects.get(name="late")
    long.refresh_from_db()
    assert late.status == WorkloadStatus.RUNNING
    assert long.status == WorkloadStatus.COMPLETED
    # woken by the submission, long before the run it was waiting for ended
    assert (late.started_at - reports[0].record.started_at).total_seconds() < 0.8
    assert len(reports) == 3


def test_a_loop_ends_when_nothing_is_wanted_soon(cluster, submit, sent, loop_settings):
    submit("vision", "long", gpus=8, spec={"duration": 60})
    started = time.monotonic()
    reports = cycle.run_scheduling_loop()
    assert len(reports) == 1
    assert time.monotonic() - started < 1.5


def test_a_loop_lingers_for_the_next_request_and_no_task_is_queued_for_it(
    cluster, submit, sent, loop_settings
):
    """Node agents' runs end when their reports come: a loop with nothing wanted waits
    SCHEDULER_LOOP_LINGER seconds for the next request, which runs in it (no task on the
    queue, no lock taken again); once the loop stops, a request queues a task again."""
    loop_settings.SCHEDULER_LOOP_LINGER = 1.0
    submit("vision", "first", gpus=8)
    sent.clear()
    triggers.cycle_task_started()  # as the task that runs the loop does first
    started = time.monotonic()
    reports = _loop_while_submitting_late(submit, after=0.4)

    assert len(reports) == 2
    assert Workload.objects.get(name="late").status == WorkloadStatus.RUNNING
    assert sent == []  # the loop ran it: no task was queued for the late submission
    # it lingered a second after its last cycle, then stopped
    assert 1.3 < time.monotonic() - started < 3
    submit("nlp", "after", gpus=2)
    assert sent == [1]


def test_a_loop_gives_way_when_another_worker_holds_the_lock(cluster, sent, loop_settings):
    holder = new_cycle_lock()
    assert holder.acquire()
    try:
        assert cycle.run_scheduling_loop() == []
        assert triggers.follow_up_wanted()  # the holder runs one more for it
    finally:
        holder.release()


def test_a_loop_out_of_time_but_not_out_of_work_hands_over_to_a_new_task(
    cluster, submit, sent, loop_settings
):
    submit("vision", "soon", gpus=8, spec={"duration": 0.5})
    reports = cycle.run_scheduling_loop(seconds=0.2)
    assert len(reports) == 1
    assert sent == [1]  # a new task will complete the run when it ends


def test_a_cycle_waits_a_moment_for_a_run_ending_just_after_it_would_start(
    cluster, submit, sent, loop_settings
):
    # Every cycle takes about 0.5 s. The first starts a (one node, 0.1 s) and b (the
    # other node, 0.7 s). When it ends a is over and b ends 0.2 s later: a cycle started
    # at once would miss b and leave its node idle until the cycle after (~0.4 s); one
    # that waits for b refills both nodes together.
    loop_settings.SCHEDULER_CYCLE_PAUSES = {"before_apply": 0.5}
    a = submit("vision", "a", gpus=8, spec={"duration": 0.1})
    b = submit("vision", "b", gpus=8, spec={"duration": 0.7})
    c = submit("vision", "c", gpus=8, spec={"duration": 60})
    d = submit("vision", "d", gpus=8, spec={"duration": 60})
    reports = cycle.run_scheduling_loop()

    for w in (a, b, c, d):
        w.refresh_from_db()
    assert a.status == b.status == WorkloadStatus.COMPLETED
    assert c.status == d.status == WorkloadStatus.RUNNING
    assert len(reports) == 2  # start a and b; complete both, start c and d
    assert c.started_at == d.started_at
    # it started once b ended, well within a cycle's 0.5 s (a loaded 2-core machine has
    # taken 0.29 s between the two)
    assert 0 <= (d.started_at - b.finished_at).total_seconds() < 0.45


@pytest.fixture
def stop_loops_later(monkeypatch):
    """stop_loops_later(after) -> the worker's shutdown asks for the loops to stop
    (scheduler_core.loop.cycle.stop_loops) `after` seconds from now, from another thread;
    the flag is cleared after the test."""
    monkeypatch.setattr(cycle, "_stopping", threading.Event())

    def later(after: float) -> threading.Timer:
        timer = threading.Timer(after, cycle.stop_loops)
        timer.start()
        return timer

    return later


def test_a_loop_told_to_stop_ends_after_its_cycle_not_at_its_runs_end(
    cluster, submit, sent, loop_settings, stop_loops_later
):
    """A worker shutting down (Ctrl-C on `manage.py run`) waits for its tasks: the loop,
    waiting for a run that ends in 1.5 s, stops waiting at once."""
    submit("vision", "a", gpus=8, pods=2, spec={"duration": 1.5})
    started = time.monotonic()
    stop_loops_later(0.3)  # while the loop waits for a's end
    reports = cycle.run_scheduling_loop()
    assert len(reports) == 1  # one cycle: started a, did not wait for its end
    assert time.monotonic() - started < 1.0
    assert Workload.objects.get(name="a").status == WorkloadStatus.RUNNING
