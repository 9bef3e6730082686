"""Checking a step's `expect` against what the simulation reached."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from scheduler_core.whatif.scenarios.model import Expect, Scenario

if TYPE_CHECKING:
    from scheduler_core.whatif.scenarios.runner import StepResult

TOLERANCE = 0.01


def _status(result: StepResult, name: str) -> str:
    entry = result.workloads.get(name)
    return "deleted" if entry is None else str(entry["status"])


def check_expect(expect: Expect, result: StepResult, scenario: Scenario) -> list[str]:
    """Readable lines, one per expectation that does not hold (empty = all hold)."""
    return [
        *_statuses(expect, result),
        *_only_running(expect, result),
        *_pod_counts(expect, result),
        *_events(expect, result),
        *_queue_figures(expect, result),
    ]


STATUS_KEYS = (
    ("running", "running"),
    ("pending", "pending"),
    ("completed", "completed"),
    ("failed", "failed"),
)
"""Expect's status lists and the status each names."""

EVENT_KEYS = (("preempted", "preempted"), ("moved", "moved"))
"""Expect's event lists and the event type each names."""

FIGURE_KEYS = (("allocated", "allocated"), ("fairshare", "fairshare"))
"""Expect's queue tables and the figure each names."""


def _statuses(expect: Expect, result: StepResult) -> Iterator[str]:
    for key, status in STATUS_KEYS:
        for n in getattr(expect, key) or ():
            actual = _status(result, n)
            if actual != status:
                reason = result.workloads.get(n, {}).get("reason")
                detail = f" ({reason})" if reason else ""
                yield f"{key}: expected {n} {status}, it is {actual}{detail}"


def _only_running(expect: Expect, result: StepResult) -> Iterator[str]:
    if not expect.only or expect.running is None:
        return
    extra = sorted(
        n
        for n, e in result.workloads.items()
        if e["status"] == "running" and n not in expect.running
    )
    if extra:
        yield f"running (only): not expected to run: {', '.join(extra)}"


def _pod_counts(expect: Expect, result: StepResult) -> Iterator[str]:
    for n, pods in (expect.pods or {}).items():
        got = result.workloads.get(n, {}).get("pods", 0)
        if got != pods:
            yield f"pods: expected {n} to run {pods} pods, it runs {got}"


def _events(expect: Expect, result: StepResult) -> Iterator[str]:
    for key, event_type in EVENT_KEYS:
        names = getattr(expect, key)
        if names is None:
            continue
        happened = sorted({e["workload"] for e in result.events if e["type"] == event_type})
        expected = sorted(set(names))
        if happened == expected:
            continue
        missing = [n for n in expected if n not in happened]
        unexpected = [n for n in happened if n not in expected]
        parts = []
        if missing:
            parts.append(f"expected but did not happen: {', '.join(missing)}")
        if unexpected:
            parts.append(f"happened but not expected: {', '.join(unexpected)}")
        yield f"{key}: {'; '.join(parts)}"


def _queue_figures(expect: Expect, result: StepResult) -> Iterator[str]:
    for key, figure in FIGURE_KEYS:
        for queue, per_pool in (getattr(expect, key) or {}).items():
            for pool, amounts in per_pool.items():
                figures: dict[str, Any] = result.queues.get(queue, {}).get(pool, {}).get(figure, {})
                for res, want in amounts.items():
                    got = float(figures.get(res, 0.0))
                    if abs(got - want) > TOLERANCE:
                        yield f"{key}: {queue} in pool {pool}: expected {res} {want:g}, got {got:g}"
