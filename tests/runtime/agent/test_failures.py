"""Failure is failure: a pod that exits non-zero (or cannot start, or is lost) is a failed
run of its workload's command. It restarts only as often as the workload allows (by
default DEFAULT_FAILED_RUN_RESTARTS, not forever), each attempt is shown as a failed run
with its exit code, and it is never a preemption or work lost to the scheduler."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.engine.transitions import DEFAULT_FAILED_RUN_RESTARTS
from scheduler_core.live_events import recording
from scheduler_core.models import SchedulingEvent, Workload
from tests.runtime.agent.conftest import runs_of


def _fail_runs(agents, w, how: dict, times: int) -> None:
    """Let the workload's newest run end `how`, `times` times (its back-off skipped)."""
    for _ in range(times):
        Workload.objects.filter(pk=w.pk).update(retry_at=timezone.now() - timedelta(seconds=1))
        agents.cycle()
        run = runs_of(w)[-1]
        agents.report(run, "running")
        agents.report(run, **how)


FAILURES = [
    # how the run ends, backoff_limit, runs it gets -> what the failed event says
    ({"state": "exited", "exit_code": 3}, None, DEFAULT_FAILED_RUN_RESTARTS + 1, "code 3"),
    ({"state": "exited", "exit_code": 1}, 0, 1, "code 1"),
    ({"state": "exited", "exit_code": 2}, 2, 3, "code 2"),
    ({"state": "start_failed", "reason": "no such file"}, 1, 2, "could not start: no such"),
    ({"state": "exited", "exit_code": 137, "signal": "SIGKILL"}, 1, 2, "(signal SIGKILL)"),
]


@pytest.mark.parametrize(("how", "limit", "runs", "words"), FAILURES)
def test_a_failing_command_restarts_as_often_as_allowed_and_is_never_a_preemption(
    agents, submit, how, limit, runs, words
):
    w = submit("crash", gpus=1, backoff_limit=limit)
    _fail_runs(agents, w, how, runs)
    w.refresh_from_db()
    assert w.status == WorkloadStatus.FAILED
    assert (w.restarts, w.preemptions) == (runs - 1, 0)
    assert len(runs_of(w)) == runs
    events = SchedulingEvent.objects.filter(workload=w)
    attempts = list(events.filter(type=EventType.RUN_FAILED).order_by("pk"))
    assert len(attempts) == runs  # each attempt, shown as a failed run
    assert all(words in e.reason for e in attempts)
    assert [e.details["restarts"] for e in attempts] == [*range(1, runs), runs - 1]
    assert all("lost_gpu_seconds" not in e.details for e in attempts)  # not lost work
    if "exit_code" in how:
        assert {e.details["exit_code"] for e in attempts} == {how["exit_code"]}
    assert not events.filter(type=EventType.PREEMPTED).exists()
    (failed,) = events.filter(type=EventType.FAILED)
    assert words in failed.reason and f"backoff limit {runs - 1}" in failed.reason


def test_a_failed_run_waits_with_its_own_reason_kind(agents, submit):
    w = submit("crash", gpus=1)
    _fail_runs(agents, w, {"state": "exited", "exit_code": 3}, 1)
    w.refresh_from_db()
    assert (w.status, w.pending_reason_kind, w.restarts) == ("pending", "backoff", 1)
    assert "exited with code 3" in w.pending_reason and "starting again in 10 s" in w.pending_reason
    assert w.retry_at is not None and w.retry_at > timezone.now()


def test_the_status_change_to_running_is_pushed_to_open_pages(agents, submit, monkeypatch):
    sent: list[dict] = []

    def published(items, send=None):  # what each of the events' groups would be sent
        sent.extend(
            {"group": group, "event": recording.event_payload(event, state)}
            for event, state in items
            for group in recording.event_groups(event)
        )

    monkeypatch.setattr(recording, "broadcast", published)
    w = submit("live", gpus=1, pods=2)
    agents.cycle()
    first, second = runs_of(w)
    agents.report(first, "running")
    assert not [m for m in sent if m["event"]["type"] == EventType.RUNNING]
    agents.report(second, "running")
    pushed = [m["event"] for m in sent if m["event"]["type"] == EventType.RUNNING]
    assert pushed and {e["workload"]["status"] for e in pushed} == {"running"}
    assert {m["group"] for m in sent if m["event"]["type"] == EventType.RUNNING} >= {
        f"workload-{w.pk}",
        f"project-{w.project_id}",
        "cluster",
    }
