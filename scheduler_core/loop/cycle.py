"""One live scheduling cycle: lock, read, decide, apply in one transaction, release.

1. Take the cycle lock without waiting (scheduler_core.loop.locks). If another worker holds it,
   ask it for one follow-up cycle and stop.
2. Read a consistent snapshot (constant number of queries). The execution backend takes
   the runs that ended by then out of it, so their GPUs count as free
   (scheduler_core.runtime).
3. Run the engine on it, outside any write transaction.
4. In one transaction: complete the ended runs, apply the decisions that still hold
   (versions re-checked under select_for_update), their events, pending reasons and
   positions, QueueState rows, usage samples when due, and a CycleRecord. A worker
   killed before the commit leaves the database as it was; its lock dies with it.
   After the commit the backend acts on them (`after_commit`: agents start and stop pods).
5. Release the lock; run one follow-up if anyone asked for it meanwhile.

Workers run cycles through `run_scheduling_loop`: back to back under one lock while
requests keep coming or simulated runs keep ending, for a bounded time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from scheduler_core import engine
from scheduler_core.adapters import (
    ApplyOutcome,
    LiveSnapshot,
    RefreshSlice,
    apply_decisions,
    load_snapshot,
    totals,
    write_queue_states,
)
from scheduler_core.adapters.runs import placed_runs, without_ended
from scheduler_core.adapters.snapshot import SnapshotMemo
from scheduler_core.choices import WorkloadStatus
from scheduler_core.db.read_only import read_only_transaction
from scheduler_core.engine.decisions import CycleResult
from scheduler_core.loop import triggers
from scheduler_core.loop.locks import CycleLock, new_cycle_lock
from scheduler_core.loop.timing import run_weight, start_delay
from scheduler_core.models import CycleRecord
from scheduler_core.runtime import execution_backend
from scheduler_core.runtime.interface import ExecutionBackend, RunEnd
from scheduler_core.runtime.usage import record_usage, usage_due

logger = logging.getLogger(__name__)


_stopping = threading.Event()


def stop_loops() -> None:
    """This process is shutting down: a running scheduling loop ends after its current
    cycle (with a follow-up asked for where a request is still open), and loops started
    from now on run one cycle. Cycles are never cut short: each commits or rolls back
    whole."""
    _stopping.set()


class LockLost(RuntimeError):
    """The cycle lock expired while the cycle ran; its transaction is rolled back."""


@dataclass
class CycleReport:
    """What a call to run_cycle did (`ran` False: another worker's cycle was running)."""

    ran: bool
    record: CycleRecord | None = None
    outcome: ApplyOutcome = field(default_factory=ApplyOutcome)
    completed: int = 0
    run_ends: list[RunEnd] = field(default_factory=list)  # simulated runs still going after it
    idle_gpus: int = 0  # whole GPUs of ready nodes left free by its decisions


@dataclass
class LoopState:
    """What a process's scheduling loop keeps from one cycle to the next: the snapshot
    memo (adapters.snapshot.SnapshotMemo). The cycle task of each worker process owns one
    (scheduler_core.loop.tasks); a cycle is correct with any state, a fresh one only
    reads more."""

    memo: SnapshotMemo = field(default_factory=SnapshotMemo)


def run_cycle(*, now: datetime | None = None, state: LoopState | None = None) -> CycleReport:
    """Run one scheduling cycle unless another one is running (then queue a follow-up)."""
    lock = _acquire()
    if lock is None:
        return CycleReport(ran=False)
    triggers.take_follow_up()  # this cycle reads the state every earlier request saw
    try:
        return _run_locked(lock, now, state or LoopState())
    finally:
        _release(lock)


def run_scheduling_loop(
    *, seconds: float | None = None, wait: bool = True, state: LoopState | None = None
) -> list[CycleReport]:
    """Run cycles back to back under one lock while one is wanted, for up to `seconds`
    (settings.SCHEDULER_LOOP_SECONDS); returns them (none if another worker holds the lock).

    A cycle is wanted when something changed (a request arrived since the last cycle read
    the database) or, with `wait`, when a simulated run ends within SCHEDULER_LOOP_WAIT
    seconds: the loop waits for that moment, still holding the lock, and wakes early for a
    request (see _wait_for_next_cycle). Freed GPUs are so refilled at once. With nothing
    wanted, it lingers SCHEDULER_LOOP_LINGER seconds for a request before it stops: the
    runs of node agents end when their reports come, and a loop that waits for them
    needs no task, no lock taken again and no connection of its own for each. At the end
    the lock is released and a request that is still open is handed to a new task, so
    other tasks on this worker get their turn.
    """
    lock = _acquire()
    if lock is None:
        return []
    state = state or LoopState()
    budget = settings.SCHEDULER_LOOP_SECONDS if seconds is None else seconds
    end = time.monotonic() + budget
    reports = []
    try:
        triggers.loop_started(budget)
        while True:
            triggers.take_follow_up()
            report = _run_locked(lock, None, state)
            reports.append(report)
            if not _wait_for_next_cycle(end, report, wait):  # False once told to stop
                break
    finally:
        triggers.loop_stopped()
        _release(lock)
    return reports


def _acquire() -> CycleLock | None:
    """The cycle lock, or None (and a follow-up asked for) when another worker has it."""
    lock = new_cycle_lock()
    if lock.acquire():
        return lock
    triggers.want_follow_up()
    # The holder may have released the lock (and checked for follow-ups) just now.
    return lock if lock.acquire() else None


def _release(lock: CycleLock) -> None:
    lock.release()
    if triggers.take_follow_up():
        triggers.enqueue_cycle()


def _wait_for_next_cycle(end: float, report: CycleReport, wait: bool) -> bool:
    """Wait (holding the lock) until the next cycle should start; False when this loop
    should stop: nothing is wanted soon, or it would run past its `end` (then it asks for
    a follow-up, which a new task runs).

    When to start is loop_timing.start_delay's choice, from the simulated runs the last
    cycle left going (none when the loop does not `wait` for runs), how long it took, and
    whether a request is open (checked every SCHEDULER_LOOP_POLL seconds): at once for
    a request while GPUs are idle and no run ends sooner than a cycle takes, else when
    the run ends that it is worth waiting for. So freed GPUs are refilled as they are
    freed, and no request waits longer than about one cycle more. With nothing wanted it
    still waits for a request until SCHEDULER_LOOP_LINGER seconds have passed (`wait`
    only).
    """
    linger = time.monotonic() + (settings.SCHEDULER_LOOP_LINGER if wait else 0.0)
    cycle_seconds = report.record.duration_seconds if report.record else 0.0
    offset = time.monotonic() - timezone.now().timestamp()
    weights: dict[float, float] = defaultdict(float)  # runs started together end together
    for run in report.run_ends if wait else ():
        weights[run.at.timestamp() + offset] += run_weight(run.gpus)
    ends = list(weights.items())
    wanted = False
    while not _stopping.is_set():
        wanted = wanted or triggers.follow_up_wanted()
        now = time.monotonic()
        delay = start_delay(
            [(at - now, gpus) for at, gpus in ends], cycle=cycle_seconds,
            request_gpus=report.idle_gpus if wanted else None,
            horizon=settings.SCHEDULER_LOOP_WAIT,
        )  # fmt: skip
        if delay is None:
            if now >= min(linger, end):
                return False  # nothing soon: the runtime tick and the beat cover later runs
            delay = min(linger, end) - now  # linger: a request may still come
            time.sleep(min(settings.SCHEDULER_LOOP_POLL, delay))
            continue
        if now + delay >= end:  # out of time, not out of work: a new task carries on
            triggers.want_follow_up()
            return False
        if delay <= 0:
            return True
        time.sleep(min(settings.SCHEDULER_LOOP_POLL, delay))
    return False


def read_snapshot(now: datetime, memo: SnapshotMemo | None = None) -> LiveSnapshot:
    """Load the snapshot inside one read transaction, so all its queries agree (on
    SQLite without holding off writers meanwhile)."""
    with read_only_transaction():
        return load_snapshot(now, memo, new_limit=settings.SCHEDULER_CYCLE_NEW_WORKLOADS or None)


def pause(phase: str) -> None:
    """Fault injection for tests: sleep at `phase` for the seconds the test settings give
    (SCHEDULER_CYCLE_PAUSES, config/settings_test.py; production settings have none)."""
    seconds = getattr(settings, "SCHEDULER_CYCLE_PAUSES", {}).get(phase)
    if seconds:
        cache.set(f"{settings.SCHEDULER_KEY_PREFIX}:cycle:paused:{phase}", time.time(), 300)
        logger.warning("cycle paused %s for %.1f s (SCHEDULER_CYCLE_PAUSES)", phase, seconds)
        time.sleep(seconds)


def _run_locked(lock: CycleLock, now: datetime | None, state: LoopState) -> CycleReport:
    t0 = time.perf_counter()
    started = now or timezone.now()
    live = read_snapshot(started, state.memo)
    t_runs = time.perf_counter()
    backend = execution_backend(live.pool_backends)
    runs = backend.take_ended_runs(placed_runs(live), started)
    live, ended = without_ended(live, runs.ended)
    t_engine = time.perf_counter()
    result = engine.run_cycle(live.snapshot)
    t_apply = time.perf_counter()
    pause("before_apply")
    with transaction.atomic():
        t_decisions = time.perf_counter()
        refresh = _refresh_slice()
        outcome = apply_decisions(
            live, result, now=started, backend=backend, refresh=refresh, ended=ended
        )
        t_queues = time.perf_counter()
        queue_rows = write_queue_states(live, result)
        usage_start = usage_due(started)
        if usage_start is not None:
            record_usage(start=usage_start, end=started, held=_held_gpus(live))
        pause("before_commit")
        t_check = time.perf_counter()
        if not lock.still_held():
            raise LockLost("the cycle lock was lost; nothing of this cycle is kept")
        marks = (t0, t_runs, t_engine, t_apply, t_decisions, t_queues, t_check)
        record = _record(started, live, result, outcome, queue_rows, marks)
    _after_commit(backend)
    if refresh is not None and refresh.limit is not None:
        _refresh_continues(outcome.refresh_resume_after)
    if outcome.dropped or live.unseen or result.more_alike:
        # decide again on what changed under this cycle, or on what it left for the next
        triggers.want_follow_up()
    return CycleReport(
        ran=True, record=record, outcome=outcome, completed=outcome.completed,
        run_ends=_run_ends(runs.going, outcome), idle_gpus=result.idle_gpus,
    )  # fmt: skip


def _record(
    started: datetime,
    live: LiveSnapshot,
    result: CycleResult,
    outcome: ApplyOutcome,
    queue_rows: int,
    marks: tuple[float, ...],
) -> CycleRecord:
    """The cycle's record: what it decided and where its time went (`marks`: when it
    began, read the runs, ran the engine, began to apply, to decide, to write queue
    states and to check its lock)."""
    t0, t_runs, t_engine, t_apply, t_decisions, t_queues, t_check = marks
    pending, running = totals(live, result)
    done = time.perf_counter()
    return CycleRecord.objects.create(
        started_at=started,
        duration_seconds=done - t0,
        decisions=outcome.applied,
        dropped_decisions=outcome.dropped,
        pending=pending,
        running=running,
        details={
            "applied": dict(outcome.by_kind),
            "dropped": outcome.dropped_details[:20],
            "completed": outcome.completed,
            "events": outcome.events,
            "reasons_written": outcome.reasons_written,
            "queue_states_written": queue_rows,
            "workloads": len(live.snapshot.workloads),
            "seconds": {
                "load": round(t_runs - t0, 4),
                "runtime": round(t_engine - t_runs, 4),
                "engine": round(t_apply - t_engine, 4),
                "apply": round(done - t_apply, 4),
                "apply_begin": round(t_decisions - t_apply, 4),
                "apply_decisions": round(t_queues - t_decisions, 4),
                "apply_queues": round(t_check - t_queues, 4),
                "apply_check": round(done - t_check, 4),
            },
        },
    )


def _after_commit(backend: ExecutionBackend) -> None:
    """Let the backend act on the committed decisions (agents: start and stop pods). A
    failure there does not undo the cycle: the next cycle, report or tick tries again."""
    try:
        backend.after_commit()
    except Exception:
        logger.exception("the %s backend failed after the cycle's commit", backend.name)


def _run_ends(going: list[RunEnd], outcome: ApplyOutcome) -> list[RunEnd]:
    """The runs known to end that are going after the cycle: those going when it began
    that it did not stop, and those it started (the cycle knows both, so the loop needs no
    query). A backend whose runs end when reported knows none."""
    kept = [run for run in going if run.workload_id not in outcome.stopped_runs]
    return kept + list(outcome.run_ends.values())


def _refresh_slice() -> RefreshSlice | None:
    """Which stale pending reasons and positions this cycle rewrites (see RefreshSlice).

    A sweep over every waiting workload starts PENDING_REASON_REFRESH seconds after the
    last one ended and rewrites at most PENDING_REASON_REFRESH_ROWS rows per cycle, so a
    queue of thousands is neither rewritten every cycle nor all in one slow cycle. Cycles
    run one at a time, so cache marks suffice to carry a sweep from one to the next.
    """
    interval = settings.PENDING_REASON_REFRESH
    if interval <= 0:
        return RefreshSlice()
    after = cache.get(_refresh_key("cursor"))
    if after is None:
        if not cache.add(_refresh_key("started"), 1, timeout=interval):
            return None
        after = 0
    return RefreshSlice(after=after, limit=settings.PENDING_REASON_REFRESH_ROWS)


def _refresh_continues(resume_after: int | None) -> None:
    """Carry the sweep on from `resume_after` next cycle, or end it (None)."""
    if resume_after is None:
        cache.set(_refresh_key("started"), 1, timeout=settings.PENDING_REASON_REFRESH)
        cache.delete(_refresh_key("cursor"))
    else:
        cache.set(_refresh_key("cursor"), resume_after, timeout=600)


def _refresh_key(name: str) -> str:
    return f"{settings.SCHEDULER_KEY_PREFIX}:pending-refresh:{name}"


def _held_gpus(live: LiveSnapshot):
    """(pool_id, department_id, project_id, gpus) per running pod in the snapshot: the
    usage time-based fairshare is charged for. A workload still `starting` on node agents
    is not charged: its processes do not run yet (its GPUs may still be releasing)."""
    for row in live.workloads.values():
        if row.status != WorkloadStatus.RUNNING:
            continue
        department_id = live.project_departments[row.project_id]
        for a in row.allocations:
            gpus = len(a.gpu_devices) * a.gpu_fraction
            yield live.node_pools[a.node_id], department_id, row.project_id, gpus
