"""The workload transitions and their one restart rule (engine.transitions), table by
table: why a run stopped, the counts before, the backoff limit -> what the workload
becomes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.engine import transitions
from scheduler_core.engine.transitions import Cause

NOW = datetime(2026, 11, 28, tzinfo=UTC)


@dataclass
class Row:
    """A workload's fields, as the models and the apply step's rows have them."""

    status: str = transitions.RUNNING
    restarts: int = 0
    preemptions: int = 0
    started_at: datetime | None = NOW - timedelta(seconds=100)
    finished_at: datetime | None = None
    pending_since: datetime | None = None
    pending_reason: str = ""
    pending_reason_kind: str = ""
    queue_position: int | None = None
    progress_seconds: float = 0.0


REQUEUES = [
    # cause, restarts, preemptions, backoff_limit -> status, restarts, preemptions, kind, delay
    (Cause.PREEMPTED, 0, 0, None, "pending", 0, 1, "preempted", 0.0),
    (Cause.PREEMPTED, 5, 2, 0, "pending", 5, 3, "preempted", 0.0),  # never held against it
    (Cause.DRAINED, 0, 0, 0, "pending", 0, 0, "preempted", 0.0),
    (Cause.FAULT, 0, 0, None, "pending", 1, 0, "preempted", 0.0),  # faults: always by default
    (Cause.FAULT, 40, 0, None, "pending", 41, 0, "preempted", 0.0),
    (Cause.FAULT, 0, 0, 1, "pending", 1, 0, "preempted", 0.0),
    (Cause.FAULT, 1, 0, 1, "failed", 1, 0, "", 0.0),  # a restart is counted only if given
    (Cause.FAULT, 0, 0, 0, "failed", 0, 0, "", 0.0),
    (Cause.FAILED_RUN, 0, 0, None, "pending", 1, 0, "backoff", 10.0),
    (Cause.FAILED_RUN, 1, 0, None, "pending", 2, 0, "backoff", 20.0),
    (Cause.FAILED_RUN, 2, 0, None, "pending", 3, 0, "backoff", 40.0),
    (Cause.FAILED_RUN, 3, 0, None, "failed", 3, 0, "", 0.0),  # the default is not "forever"
    (Cause.FAILED_RUN, 0, 4, 0, "failed", 0, 4, "", 0.0),  # and never a preemption
    (Cause.FAILED_RUN, 9, 0, 20, "pending", 10, 0, "backoff", 300.0),  # back-off capped
]


@pytest.mark.parametrize(
    ("cause", "restarts", "preemptions", "limit", "status", "restarts_after",
     "preemptions_after", "kind", "delay"),
    REQUEUES,
)  # fmt: skip
def test_a_stopped_run_requeues_or_fails_its_workload_by_one_rule(
    cause, restarts, preemptions, limit, status, restarts_after, preemptions_after, kind, delay
):
    w = Row(restarts=restarts, preemptions=preemptions)
    outcome = transitions.requeue(
        w, cause=cause, why="node n1 is down", at=NOW, progress=30.0, backoff_limit=limit
    )
    assert (w.status, w.restarts, w.preemptions) == (status, restarts_after, preemptions_after)
    assert (w.pending_reason_kind, outcome.retry_delay) == (kind, delay)
    assert outcome.requeued == (status == "pending")
    assert w.started_at is None and w.progress_seconds == 30.0  # its checkpoint is kept
    if status == "pending":
        assert w.pending_since == NOW and w.pending_reason.startswith("re-queued: node n1")
        assert transitions.retry_at(outcome, NOW) == (
            NOW + timedelta(seconds=delay) if delay else None
        )
    else:
        assert w.finished_at == NOW and w.pending_reason == ""


def test_the_engines_simulation_asks_the_same_question():
    """The pure rule (what the engine's faults and crashes ask) agrees with the table."""
    for cause, restarts, preemptions, limit, status, after, _, _, _ in REQUEUES:
        outcome = transitions.requeue_outcome(
            cause=cause, restarts=restarts, preemptions=preemptions, backoff_limit=limit
        )
        assert outcome.requeued == (status == "pending") and outcome.restarts == after


CHECKPOINTS = [
    # checkpoint_every, duration, progress before, seconds run -> progress kept
    (None, 100, 0, 55, 0.0),
    (20, 100, 0, 55, 40.0),
    (20, 100, 40, 10, 40.0),
    (20, 50, 40, 30, 40.0),  # not beyond the duration's last whole checkpoint
    (30, None, 0, 95, 90.0),
]


@pytest.mark.parametrize(("every", "duration", "progress", "ran", "kept"), CHECKPOINTS)
def test_a_stopped_run_keeps_its_last_checkpoint(every, duration, progress, ran, kept):
    spec = {k: v for k, v in (("checkpoint_every", every), ("duration", duration)) if v}
    assert (
        transitions.progress_kept(
            spec=spec, progress=progress, started_at=NOW - timedelta(seconds=ran), stopped_at=NOW
        )
        == kept
    )


def test_start_running_complete_and_the_users_transitions():
    w = Row(status=transitions.PENDING, started_at=None, pending_reason="waiting", queue_position=3)
    transitions.start(w, status=transitions.STARTING, at=NOW)
    assert (w.status, w.started_at, w.pending_reason, w.queue_position) == (
        "starting",
        NOW,
        "",
        None,
    )
    assert transitions.mark_running(w) and w.status == "running"
    assert not transitions.mark_running(w)  # once
    reason = transitions.complete(w, at=NOW + timedelta(seconds=12), progress=12.0)
    assert (w.status, w.progress_seconds, reason) == (
        "completed",
        12.0,
        "finished after running 12.0 s",
    )
    other = Row()
    transitions.suspend(other, why="suspended by a user")
    assert (other.status, other.pending_reason) == ("suspended", "suspended by a user")
    transitions.resume(other, why="waiting")
    assert other.status == "pending"
    transitions.cancel(other, at=NOW)
    assert (other.status, other.finished_at) == ("cancelled", NOW)


@pytest.mark.parametrize(
    ("restarts", "limit", "reason"),
    [
        (0, 0, "exited with code 3; backoff limit 0: no restart"),
        (1, 1, "exited with code 3; restarted once, backoff limit 1 used up"),
        (3, 3, "exited with code 3; restarted 3 times, backoff limit 3 used up"),
    ],
)
def test_the_reason_a_workload_fails_with_names_its_restarts(restarts, limit, reason):
    assert (
        transitions.exhausted_reason("exited with code 3", restarts=restarts, limit=limit) == reason
    )
