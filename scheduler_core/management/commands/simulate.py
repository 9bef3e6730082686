"""`manage.py simulate FILE --json | --check | --summary`: run a scenario file (FORMAT.md).

Thin: loading, running and checking live in scheduler_core.whatif.scenarios.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduler_core.whatif.replay import ENGINE, simulate_figures
from scheduler_core.whatif.run_figures import figures_table
from scheduler_core.whatif.scenarios import ScenarioError, StepResult, load_scenario, run_scenario


class Command(BaseCommand):
    # the simulator touches neither the database nor URLs; it must work on any checkout
    requires_system_checks: list[str] = []
    help = (
        "Run a scheduling scenario in simulated time "
        "(--json: one object per step; --check: verify expectations; "
        "--summary: the run's figures)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="scenario file (YAML or JSON)")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--json", action="store_true", help="print one JSON object per step")
        mode.add_argument("--check", action="store_true", help="exit 1 if an expect fails")
        mode.add_argument(
            "--summary",
            action="store_true",
            help="print makespan, completion and queueing times, utilisation, fairness, "
            "preemptions, moves and lost GPU-hours instead of every step",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            scenario = load_scenario(Path(path))
        except ScenarioError as exc:
            self.stderr.write(f"error: {exc}")
            sys.exit(2)
        if options["json"]:

            def emit(step: StepResult) -> None:
                self.stdout.write(json.dumps(step.to_json(), sort_keys=False))

            run_scenario(scenario, on_step=emit)
            return
        if options["summary"]:
            for line in figures_table({ENGINE: simulate_figures(scenario)}):
                self.stdout.write(line)
            return
        run = run_scenario(scenario)
        if run.failures:
            self.stdout.write(f"FAIL {scenario.name} ({scenario.source})")
            for f in run.failures:
                self.stdout.write(f"  step {f.step} (at {f.at:g}): {f.line}")
            self.stdout.write(
                f"{len(run.failures)} expectation(s) failed in "
                f"{len({f.step for f in run.failures})} of {run.checked} checked step(s)"
            )
            sys.exit(1)
        self.stdout.write(
            f"ok {scenario.name}: {run.steps} steps, {run.checked} checked, all expectations hold"
        )
