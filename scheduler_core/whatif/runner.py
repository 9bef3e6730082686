"""Running a what-if: the baseline copy and, when there are changes, the changed copy, over a
horizon of simulated time, with progress reported as it goes.

The horizon is cut into steps every `step_seconds` (about STEPS_PER_RUN steps, rounded to a
readable interval); a scenario file keeps its own steps and gets empty steps added after
its last one up to the horizon, so running work can finish (the horizon never cuts a
scenario short).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scheduler_core.whatif.changes import apply_changes, describe_changes, is_empty
from scheduler_core.whatif.compare import compare_runs, run_metrics

if TYPE_CHECKING:
    from scheduler_core.whatif.scenarios import StepResult

ProgressCallback = Callable[[float, str], None]
SCENARIO_SOURCE = "scenario.yaml"
STEPS_PER_RUN = 60
PREVIEW_STEPS = 20
NICE_INTERVALS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600)


def step_seconds_for(horizon: float, steps: int = STEPS_PER_RUN) -> int:
    """A readable interval that cuts `horizon` into about `steps` steps."""
    wanted = max(horizon / max(steps, 1), 1)
    for interval in NICE_INTERVALS:
        if interval >= wanted:
            return interval
    return int(math.ceil(wanted / 3600) * 3600)


def with_horizon(
    scenario: dict[str, Any], *, horizon: float, steps: int = STEPS_PER_RUN
) -> tuple[dict[str, Any], int]:
    """A copy of `scenario` whose steps reach `horizon` (see the module docstring)."""
    scenario = copy.deepcopy(scenario)
    interval = step_seconds_for(horizon, steps)
    timeline = list(scenario.get("steps") or [])
    last = max((float(s.get("at", 0)) for s in timeline), default=None)
    at = 0.0 if last is None else last + interval
    while at <= horizon:
        timeline.append({"at": int(at) if float(at).is_integer() else at})
        at += interval
    scenario["steps"] = timeline
    return scenario, interval


def simulate(scenario: dict[str, Any], on_step: Callable[[int, int, float], None]) -> list[dict]:
    """Run one scenario dict in the engine's simulator; one output dict per step.

    `on_step(done, total, at)` is called after every step.
    """
    from scheduler_core.whatif.scenarios import parse_scenario, run_scenario

    loaded = parse_scenario(scenario, SCENARIO_SOURCE)
    total = len(loaded.steps)
    outputs: list[dict] = []

    def step_done(output: StepResult) -> None:
        data = output.to_json()
        if output.checked:
            data["expect_failures"] = list(output.failures)
        outputs.append(data)
        on_step(len(outputs), total, float(data.get("at", 0)))

    run_scenario(loaded, on_step=step_done)
    return outputs


def run_whatif(
    *,
    scenario: dict[str, Any],
    changes: dict[str, Any] | None,
    horizon: float,
    on_progress: ProgressCallback,
    steps: int = STEPS_PER_RUN,
) -> dict[str, Any]:
    """Run the baseline (and the changed copy) and return the stored result.

    Result: {"horizon", "step_seconds", "changes", "changes_text",
    "runs": {"baseline": metrics, "changed": metrics?}, "comparison": ...?}
    (metrics and comparison: see simulations.compare).
    """
    base, interval = with_horizon(scenario, horizon=horizon, steps=steps)
    runs = [("baseline", base)]
    if not is_empty(changes):
        runs.append(("changed", apply_changes(base, changes or {})))
    end = max((float(s.get("at", 0)) for s in base["steps"]), default=0.0)
    metrics: dict[str, Any] = {}
    for index, (label, copy_) in enumerate(runs):

        def on_step(done: int, total: int, at: float, index: int = index, label: str = label):
            fraction = (index + done / max(total, 1)) / len(runs)
            on_progress(
                fraction,
                f"{label} run: {_clock(at)} of {_clock(end)} simulated"
                + (f" (run {index + 1} of {len(runs)})" if len(runs) > 1 else ""),
            )

        on_progress(index / len(runs), f"{label} run: starting")
        metrics[label] = run_metrics(simulate(copy_, on_step), scenario=copy_)
    result: dict[str, Any] = {
        "horizon": horizon,
        "step_seconds": interval,
        "changes": changes or {},
        "changes_text": describe_changes(changes or {}, scenario=scenario),
        "runs": metrics,
    }
    if "changed" in metrics:
        result["comparison"] = compare_runs(metrics["baseline"], metrics["changed"])
    return result


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
