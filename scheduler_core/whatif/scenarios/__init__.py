"""Scenarios: load and validate scenario files (FORMAT.md), run them in simulated time
with the engine, check their expectations. No Django: reused by `manage.py simulate`,
the console's scenario upload and what-if runs in Celery workers.

- `load_scenario(text_or_path, source=None) -> Scenario` (raises ScenarioError)
- `run_scenario(scenario, on_step=None) -> ScenarioRun` (streams: each
  step's output goes to `on_step` and is dropped; the run keeps counts and failures)
- `StepResult.to_json()`, `StepResult.failures`; `play(sim, steps)` for custom timelines
"""

from scheduler_core.whatif.scenarios.errors import ScenarioError
from scheduler_core.whatif.scenarios.loader import load_scenario, parse_scenario
from scheduler_core.whatif.scenarios.model import Event, Expect, Scenario, Step
from scheduler_core.whatif.scenarios.runner import (
    ScenarioRun,
    StepFailure,
    StepResult,
    build_simulation,
    play,
    run_scenario,
)

__all__ = [
    "Event",
    "Expect",
    "Scenario",
    "ScenarioError",
    "ScenarioRun",
    "Step",
    "StepFailure",
    "StepResult",
    "build_simulation",
    "load_scenario",
    "parse_scenario",
    "play",
    "run_scenario",
]
