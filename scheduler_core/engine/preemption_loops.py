"""Preemption loops: a workload that is evicted again and again soon after each start.

Each start of such a workload throws its run away again; a pool that holds loops
(PoolConfig.preemption_loop_evictions = n) keeps a workload evicted n times in a row,
each within PREEMPTION_LOOP_SPAN of its start, pending for PREEMPTION_LOOP_SPAN after its
last eviction, with a reason naming the figures; then it may start again. A loop is
reported (an event, a counter) in every pool; only the hold is the setting's.
"""

from __future__ import annotations

from scheduler_core.engine.reasons import format_time
from scheduler_core.engine.resources import format_amount
from scheduler_core.engine.snapshot import PoolConfig, WorkloadSpec

PREEMPTION_LOOP_SPAN = 3600.0
"""Seconds: an eviction this soon after a start is quick; a loop is held this long."""
LOOP_DETECTED_AFTER = 3
"""Quick evictions in a row that are reported as a loop (an event, a counter), in
every pool; a pool may hold workloads after fewer or more (preemption_loop_evictions)."""
REASON_KIND = "preemption_loop"


def quick_evictions_after(quick_evictions: int, ran_seconds: float | None) -> int:
    """A workload's quick evictions (WorkloadSpec.quick_evictions) once evicted after a
    run of `ran_seconds` (None: unknown): one more if it ran less than
    PREEMPTION_LOOP_SPAN, else none (the streak is broken)."""
    if ran_seconds is not None and ran_seconds < PREEMPTION_LOOP_SPAN:
        return quick_evictions + 1
    return 0


def loop_detected(quick_evictions: int, ran_seconds: float | None) -> str | None:
    """The words of the event when an eviction after a run of `ran_seconds` makes a
    workload with `quick_evictions` so far a loop (once per loop: when the streak reaches
    LOOP_DETECTED_AFTER), else None."""
    after = quick_evictions_after(quick_evictions, ran_seconds)
    if quick_evictions < LOOP_DETECTED_AFTER <= after:
        minutes = format_amount(PREEMPTION_LOOP_SPAN / 60)
        return (
            f"preemption loop: evicted {after} times in a row, each within {minutes} min "
            f"of starting"
        )
    return None


def loop_hold(w: WorkloadSpec, config: PoolConfig, now: float) -> str | None:
    """Why the pending `w` is held for a preemption loop in a pool with `config`, or None."""
    threshold = config.preemption_loop_evictions
    if threshold is None or w.quick_evictions < threshold or w.pending_since is None:
        return None
    until = w.pending_since + PREEMPTION_LOOP_SPAN
    if now >= until:
        return None
    minutes = format_amount(PREEMPTION_LOOP_SPAN / 60)
    return (
        f"held in a preemption loop: evicted {w.quick_evictions} times in a row, each "
        f"within {minutes} min of starting ({w.preemptions} evictions in all); pool "
        f"{config.name} holds it until {format_time(until, now)} rather than start it only "
        f"to evict it again"
    )
