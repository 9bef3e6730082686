"""The Slurm benchmark says how Fairway on Slurm stands against each goal of issue 31."""

from __future__ import annotations

import dataclasses

from benchmarks.slurm_vs_fairway.run import goals
from scheduler_core.whatif.run_figures import RunTally


def _figures(makespan: float, jct: float, fairness: float):  # type: ignore[no-untyped-def]
    return dataclasses.replace(
        RunTally(capacity_gpus=8, shares={}).figures(),
        makespan_hours=makespan,
        mean_completion_hours=jct,
        fairness_deviation=fairness,
    )


def test_the_goals_are_judged_from_the_runs_to_two_decimals() -> None:
    lines = goals(
        {
            "slurm alone": _figures(3.25, 1.00, 0.175),
            "fairway on slurm": _figures(3.33, 0.90, 0.038),
        }
    )
    assert lines[1:] == [
        "  fairness deviation at most half of Slurm's: 0.038 against 0.175: MET",
        "  mean completion time no worse: 0.90 h against 1.00 h: MET",
        "  makespan within 2 %: 3.33 h against 3.25 h (+2.5%): NOT MET",
    ]
    assert goals({"slurm alone": _figures(3.25, 1.0, 0.1)}) == []  # one side run only
