"""`--runs N`: the benchmark N times, each run in a process of its own, then the figures
that decide issue 31's goals as ranges and medians over the runs.

One run is not enough to judge a goal by: Slurm alone recomputes its fair-share factors
once a real minute, so the same slice is scheduled differently from run to run (its
makespan moved between 3.25 and 3.45 h on the quick slice), and a run of either side moves
with the machine's load. Each run is exactly what `--runs 1` does (a fresh Slurm, a fresh
database), started as a child process that prints its own table and writes its figures
to a JSON file (`--figures-out`); the engine alone runs in the first only (it is
deterministic). The goals are then judged run by run (met in k of N) and on the medians.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.slurm_vs_fairway.cluster import ROOT
from scheduler_core.whatif.run_figures import RunFigures, figures_from_json, text_table

SLURM, FAIRWAY = "slurm alone", "fairway on slurm"  # the sides' labels in every table

# (label, how to read it, how to print it) for the summary's rows
SUMMARY_ROWS: list[tuple[str, Callable[[RunFigures], float], str]] = [
    ("makespan (h)", lambda r: r.makespan_hours, "{:.2f}"),
    ("completion time, mean (h)", lambda r: r.mean_completion_hours, "{:.2f}"),
    ("completion time, p95 (h)", lambda r: r.p95_completion_hours, "{:.2f}"),
    ("GPU utilisation (%)", lambda r: r.utilisation * 100, "{:.1f}"),
    ("fairness deviation", lambda r: r.fairness_deviation, "{:.3f}"),
    ("lost GPU-h", lambda r: r.lost_gpu_hours, "{:.1f}"),
]


def child_command(args: argparse.Namespace, index: int, figures_out: Path) -> list[str]:
    """The command of run `index` (from 0): this benchmark once, with the same slice."""
    sides = args.sides.split(",")
    if index > 0:
        sides = [side for side in sides if side != "engine"] or sides
    command = [sys.executable, "-m", "benchmarks.slurm_vs_fairway", "--runs", "1"]
    command += ["--trace", str(args.trace), "--start", args.start]
    command += ["--hours", f"{args.hours:g}", "--nodes", str(args.nodes)]
    command += ["--cap-hours", f"{args.cap_hours:g}", "--compression", f"{args.compression:g}"]
    command += ["--sides", ",".join(sides), "--slurm-dir", str(args.slurm_dir)]
    command += ["--figures-out", str(figures_out)]
    if args.team_nodes is not None:
        command += ["--team-nodes", str(args.team_nodes)]
    return command


def write_figures(path: Path, runs: dict[str, RunFigures]) -> None:
    path.write_text(json.dumps({label: figures.to_json() for label, figures in runs.items()}))


def read_figures(path: Path) -> dict[str, RunFigures]:
    data = json.loads(path.read_text())
    return {label: figures_from_json(figures) for label, figures in data.items()}


def repeat(args: argparse.Namespace, log: Callable[[str], None]) -> list[dict[str, RunFigures]]:
    """Run the benchmark args.runs times, each in a child process; the figures of the runs
    that finished. A run that fails stops the series (its own output says why; the next
    runs would meet the same Slurm and the same slice)."""
    done: list[dict[str, RunFigures]] = []
    with tempfile.TemporaryDirectory(prefix="slurm-vs-fairway-") as scratch:
        for index in range(args.runs):
            out = Path(scratch) / f"run-{index}.json"
            print(f"\n=== run {index + 1} of {args.runs} ===", flush=True)
            finished = subprocess.run(child_command(args, index, out), cwd=ROOT, check=False)
            if finished.returncode != 0 or not out.is_file():
                log(f"run {index + 1} failed (exit status {finished.returncode}): no more runs")
                break
            done.append(read_figures(out))
    return done


def summary(runs: Sequence[dict[str, RunFigures]]) -> list[str]:
    """Each side's figures over the runs, `min-max (median)`, one row per figure."""
    sides = [side for side in (SLURM, FAIRWAY) if any(side in run for run in runs)]
    if not sides:
        return []
    table = [[f"over {len(runs)} runs: min-max (median)", *sides]]
    for label, read, form in SUMMARY_ROWS:
        row = [label]
        for side in sides:
            values = sorted(read(run[side]) for run in runs if side in run)
            low, high, mid = (form.format(v) for v in (values[0], values[-1], _median(values)))
            row.append(f"{low}-{high} ({mid})")
        table.append(row)
    return text_table(table)


def goals_over_runs(
    runs: Sequence[dict[str, RunFigures]],
    rows: Callable[[RunFigures, RunFigures], list[tuple[str, str, bool]]],
) -> list[str]:
    """Each goal (`rows`: the goals of one run) met in k of the runs that have both sides,
    and judged on the medians of both sides' figures."""
    pairs = [(run[SLURM], run[FAIRWAY]) for run in runs if SLURM in run and FAIRWAY in run]
    if len(pairs) < 2:
        return []
    each = [rows(slurm, fairway) for slurm, fairway in pairs]
    medians = rows(_medians([s for s, _ in pairs]), _medians([f for _, f in pairs]))
    lines = [f"goals (issue 31) over {len(pairs)} runs, Fairway on Slurm against Slurm alone:"]
    for i, (name, figures, ok) in enumerate(medians):
        met = sum(1 for run_rows in each if run_rows[i][2])
        verdict = "MET" if ok else "NOT MET"
        lines.append(f"  {name}: met in {met} of {len(pairs)}; medians {figures}: {verdict}")
    return lines


def _medians(runs: Sequence[RunFigures]) -> RunFigures:
    """The first run with the judged figures replaced by their medians over `runs`."""
    return dataclasses.replace(
        runs[0],
        makespan_hours=_median([r.makespan_hours for r in runs]),
        mean_completion_hours=_median([r.mean_completion_hours for r in runs]),
        fairness_deviation=_median([r.fairness_deviation for r in runs]),
    )


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))
