"""Run a scenario step by step in simulated time, check its expectations, and render
each step as the JSON object of FORMAT.md.

Streaming: a step's state is rendered only for whoever needs it (an `on_step` callback,
the step's own `expect`) and dropped once they are done with it; a run keeps only its
counts and the expectations that failed, so memory does not grow with the steps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.engine.decisions import CycleResult
from scheduler_core.engine.simulation import SimEvent, Simulation
from scheduler_core.whatif.scenarios.expect import check_expect
from scheduler_core.whatif.scenarios.model import Event, Scenario, Step


@dataclass(slots=True)
class StepResult:
    """The state after a step: per-workload status, queue figures, events of the step
    and the expectations that failed (empty when all hold)."""

    step: int
    at: float
    workloads: dict[str, dict[str, Any]]
    queues: dict[str, dict[str, dict[str, dict[str, float]]]]
    events: list[dict[str, Any]]
    failures: list[str] = field(default_factory=list)
    checked: bool = False

    def to_json(self) -> dict[str, Any]:
        """The object printed by `simulate --json`."""
        return {
            "step": self.step,
            "at": _num(self.at),
            "workloads": self.workloads,
            "queues": self.queues,
            "events": self.events,
        }


@dataclass(frozen=True, slots=True)
class StepFailure:
    """One expectation that did not hold, at the step where it was checked."""

    step: int
    at: float
    line: str


@dataclass(slots=True)
class ScenarioRun:
    """What a run keeps: how many steps ran and were checked, and what failed."""

    steps: int = 0
    checked: int = 0
    failures: list[StepFailure] = field(default_factory=list)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def build_simulation(scenario: Scenario) -> Simulation:
    """A simulation at time 0 holding the scenario's initial cluster."""
    return Simulation(
        pools=scenario.pools,
        nodes={n.name: n for n in scenario.nodes},
        queues={q.name: q for q in scenario.queues},
        active={w.id: w for w in scenario.workloads},
        durations=dict(scenario.durations),
        status={w.id: w.status for w in scenario.workloads},
    )


def apply_event(sim: Simulation, event: Event) -> None:
    """Apply one scenario event to the simulation."""
    if event.type == "submit":
        assert event.workload is not None
        spec = dataclasses.replace(event.workload, creation_order=sim.next_creation_order())
        sim.submit(spec, event.duration)
    elif event.type == "finish":
        sim.finish(event.target)
    elif event.type == "fail":
        sim.crash(event.target)
    elif event.type == "delete":
        sim.delete(event.target)
    elif event.type == "set_priority":
        sim.set_workload(event.target, priority=event.values["priority"])
    elif event.type == "set_quota":
        sim.set_quota(event.target, event.values["pool"], event.values["amounts"])
    elif event.type == "set_weight":
        if event.values["scope"] == "workload":
            sim.set_workload(event.target, weight=event.values["weight"])
        else:
            sim.set_queue(event.target, over_quota_weight=event.values["over_quota_weight"])
    elif event.type == "node_down":
        sim.set_node_state(event.target, up=False)
    elif event.type == "node_up":
        sim.set_node_state(event.target, up=True)


def _figures(amounts: Any) -> dict[str, float]:
    return {k: round(v, 6) for k, v in amounts.items() if math.isfinite(v)}


def snapshot_step(
    sim: Simulation, step: Step, events: list[SimEvent], result: CycleResult
) -> StepResult:
    """Render the simulation state after `step` and its events (FORMAT.md's output)."""
    rendered = [e.to_dict() for e in events]
    for e in rendered:
        e["at"] = _num(e["at"])
    workloads: dict[str, dict[str, Any]] = {}
    for wid, status in sim.status.items():
        if status == "deleted":
            continue
        entry: dict[str, Any] = {"status": status, "pods": 0, "nodes": []}
        w = sim.active.get(wid)
        if w is not None and w.pods:
            entry["pods"] = len(w.pods)
            entry["nodes"] = [p.node for p in w.pods]
        info = result.pending.get(wid)
        if info is not None and status == "pending":
            entry["reason"] = info.reason
            entry["queue_position"] = info.queue_position
        growth = result.not_growing.get(wid)
        if growth is not None and status == "running":
            entry["reason"] = growth[1]
        workloads[wid] = entry
    queues: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for qname, per_pool in result.queues.items():
        queues[qname] = {
            pool: {
                "deserved": _figures(dict(qs.deserved.items())),
                "fairshare": _figures(dict(qs.fairshare.items())),
                "allocated": _figures(dict(qs.allocated.items())),
                "requested": _figures(dict(qs.requested.items())),
            }
            for pool, qs in per_pool.items()
        }
    return StepResult(step.index, step.at, workloads, queues, rendered)


def play(
    sim: Simulation, steps: Iterable[Step]
) -> Iterator[tuple[Step, list[SimEvent], CycleResult]]:
    """Run `steps` one at a time (clock, completions, events, scheduling to a fixed
    point), yielding each step with its events and last cycle result. `steps` may be a
    generator that decides the next step from the simulation's state."""
    for step in steps:
        sim.advance(step.at)
        for event in step.events:
            apply_event(sim, event)
        result = sim.schedule()
        yield step, sim.take_events(), result


def run_scenario(
    scenario: Scenario, on_step: Callable[[StepResult], None] | None = None
) -> ScenarioRun:
    """Run every step and check its `expect`; `on_step` gets each step's rendered output
    (streaming: nothing of it is kept afterwards)."""
    sim = build_simulation(scenario)
    run = ScenarioRun()
    for step, events, result in play(sim, scenario.steps):
        run.steps += 1
        if on_step is None and step.expect is None:
            continue
        out = snapshot_step(sim, step, events, result)
        if step.expect is not None:
            out.checked = True
            out.failures = check_expect(step.expect, out, scenario)
            run.checked += 1
            run.failures.extend(StepFailure(out.step, out.at, line) for line in out.failures)
        if on_step is not None:
            on_step(out)
    return run
