"""Scenario errors: one clear message naming the file, the entry and the field."""

from __future__ import annotations


class ScenarioError(Exception):
    """A scenario that cannot be loaded, e.g.
    "scenario.yaml: workloads[3] (name 'w4'): 'gpus' must be a number >= 0, got 'two'"."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
