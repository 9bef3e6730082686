"""The Slurm benchmark says how Fairway on Slurm stands against each goal of issue 31."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pytest

from benchmarks.slurm_vs_fairway import repeat
from benchmarks.slurm_vs_fairway.run import arguments, goal_rows, goals
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


def _run(slurm_makespan: float, fairway_makespan: float):  # type: ignore[no-untyped-def]
    return {
        "slurm alone": _figures(slurm_makespan, 1.00, 0.175),
        "fairway on slurm": _figures(fairway_makespan, 0.90, 0.038),
    }


def test_over_several_runs_each_goal_says_how_often_it_was_met_and_how_the_medians_stand() -> None:
    runs = [_run(3.25, 3.33), _run(3.45, 3.34), _run(3.29, 3.33)]
    lines = repeat.goals_over_runs(runs, goal_rows)
    assert lines == [
        "goals (issue 31) over 3 runs, Fairway on Slurm against Slurm alone:",
        "  fairness deviation at most half of Slurm's: met in 3 of 3; medians 0.038 against "
        "0.175: MET",
        "  mean completion time no worse: met in 3 of 3; medians 0.90 h against 1.00 h: MET",
        "  makespan within 2 %: met in 2 of 3; medians 3.33 h against 3.29 h (+1.2%): MET",
    ]
    assert repeat.goals_over_runs(runs[:1], goal_rows) == []  # one run: its own goals say it


def test_the_summary_gives_each_figure_as_a_range_and_a_median() -> None:
    lines = repeat.summary([_run(3.25, 3.33), _run(3.45, 3.34), _run(3.29, 3.30)])
    makespan = next(line for line in lines if line.startswith("makespan"))
    assert makespan.split()[2:] == ["3.25-3.45", "(3.29)", "3.30-3.34", "(3.33)"]


def test_the_engine_alone_runs_in_the_first_run_only(tmp_path: Path) -> None:
    args = arguments(["--quick", "--runs", "3"])
    first = repeat.child_command(args, 0, tmp_path / "0.json")
    later = repeat.child_command(args, 1, tmp_path / "1.json")
    assert first[first.index("--sides") + 1] == "engine,slurm,fairway"
    assert later[later.index("--sides") + 1] == "slurm,fairway"
    assert later[later.index("--runs") + 1] == "1"  # each child is one plain run
    assert arguments(later[3:]).start == args.start  # the same slice


def test_figures_written_by_a_run_read_back_the_same(tmp_path: Path) -> None:
    runs = _run(3.25, 3.33)
    repeat.write_figures(tmp_path / "f.json", runs)
    assert repeat.read_figures(tmp_path / "f.json") == runs


def test_runs_are_read_back_in_order_and_a_failed_run_ends_the_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = tmp_path / "figures.json"
    repeat.write_figures(figures, _run(3.25, 3.33))
    outcomes = iter(["copy", "copy", "fail", "copy"])
    calls: list[int] = []

    def command(args: argparse.Namespace, index: int, out: Path) -> list[str]:
        calls.append(index)
        if next(outcomes) == "fail":
            return [sys.executable, "-c", "raise SystemExit(3)"]
        return [sys.executable, "-c", f"import shutil; shutil.copy({str(figures)!r}, {str(out)!r})"]

    monkeypatch.setattr(repeat, "child_command", command)
    done = repeat.repeat(arguments(["--quick", "--runs", "4"]), lambda line: None)
    assert calls == [0, 1, 2]  # the fourth is not started
    assert [run["fairway on slurm"].makespan_hours for run in done] == [3.33, 3.33]
