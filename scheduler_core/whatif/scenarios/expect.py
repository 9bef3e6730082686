"""Checking a step's `expect` against what the simulation reached."""

from __future__ import annotations

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
    problems: list[str] = []
    for key, status in (
        ("running", "running"),
        ("pending", "pending"),
        ("completed", "completed"),
        ("failed", "failed"),
    ):
        names = getattr(expect, key)
        if names is None:
            continue
        for n in names:
            actual = _status(result, n)
            if actual != status:
                detail = ""
                reason = result.workloads.get(n, {}).get("reason")
                if reason:
                    detail = f" ({reason})"
                problems.append(f"{key}: expected {n} {status}, it is {actual}{detail}")
    if expect.only and expect.running is not None:
        extra = sorted(
            n
            for n, e in result.workloads.items()
            if e["status"] == "running" and n not in expect.running
        )
        if extra:
            problems.append(f"running (only): not expected to run: {', '.join(extra)}")
    if expect.pods is not None:
        for n, pods in expect.pods.items():
            got = result.workloads.get(n, {}).get("pods", 0)
            if got != pods:
                problems.append(f"pods: expected {n} to run {pods} pods, it runs {got}")
    for key, event_type in (("preempted", "preempted"), ("moved", "moved")):
        names = getattr(expect, key)
        if names is None:
            continue
        happened = sorted({e["workload"] for e in result.events if e["type"] == event_type})
        expected = sorted(set(names))
        if happened != expected:
            missing = [n for n in expected if n not in happened]
            unexpected = [n for n in happened if n not in expected]
            parts = []
            if missing:
                parts.append(f"expected but did not happen: {', '.join(missing)}")
            if unexpected:
                parts.append(f"happened but not expected: {', '.join(unexpected)}")
            problems.append(f"{key}: {'; '.join(parts)}")
    for key, figure in (("allocated", "allocated"), ("fairshare", "fairshare")):
        table = getattr(expect, key)
        if table is None:
            continue
        for queue, per_pool in table.items():
            for pool, amounts in per_pool.items():
                figures: dict[str, Any] = result.queues.get(queue, {}).get(pool, {}).get(figure, {})
                for res, want in amounts.items():
                    got = float(figures.get(res, 0.0))
                    if abs(got - want) > TOLERANCE:
                        problems.append(
                            f"{key}: {queue} in pool {pool}: expected {res} {want:g}, got {got:g}"
                        )
    return problems
