"""`manage.py simulate FILE --json | --check`: run a scenario file (FORMAT.md).

Thin: loading, running and checking live in scheduler_core.whatif.scenarios.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduler_core.whatif.scenarios import ScenarioError, StepResult, load_scenario, run_scenario


class Command(BaseCommand):
    # the simulator touches neither the database nor URLs; it must work on any checkout
    requires_system_checks: list[str] = []
    help = (
        "Run a scheduling scenario in simulated time "
        "(--json: one object per step; --check: verify expectations)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="scenario file (YAML or JSON)")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--json", action="store_true", help="print one JSON object per step")
        mode.add_argument("--check", action="store_true", help="exit 1 if an expect fails")

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
        results = run_scenario(scenario)
        failures = [(r, line) for r in results for line in r.failures]
        checked = sum(1 for r in results if r.checked)
        if failures:
            self.stdout.write(f"FAIL {scenario.name} ({scenario.source})")
            for r, line in failures:
                self.stdout.write(f"  step {r.step} (at {r.at:g}): {line}")
            self.stdout.write(
                f"{len(failures)} expectation(s) failed in "
                f"{len({r.step for r, _ in failures})} of {checked} checked step(s)"
            )
            sys.exit(1)
        self.stdout.write(
            f"ok {scenario.name}: {len(results)} steps, {checked} checked, all expectations hold"
        )
