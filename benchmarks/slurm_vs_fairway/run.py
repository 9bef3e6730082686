"""Fairway on Slurm against Slurm alone, side by side on one local Slurm:

    python -m benchmarks.slurm_vs_fairway            # the full slice (about 12 min)
    python -m benchmarks.slurm_vs_fairway --quick    # a smaller slice, under 5 minutes
    python -m benchmarks.slurm_vs_fairway --quick --runs 5   # five runs, ranges and medians
    python -m benchmarks.slurm_vs_fairway --trace PATH --team-nodes PATH

The same slice of the Philly trace (`../shared/traces/philly.csv` beside the repository
unless --trace says otherwise; teams' deserved GPUs in proportion to `philly_vc.csv`'s
nodes) is replayed on a Slurm of N nodes x 8 fake GPUs brought up by bin/slurm (with
slurmdbd + MariaDB), each job a real process sleeping its compressed duration:

1. Slurm alone: one account per team with fair-share = its quota, priority/multifactor
   with fair-share, backfill with the jobs' time limits;
2. Fairway deciding (the settings a new pool gets: the lab profile), Slurm executing, the
   same quotas as deserved GPUs (needs the Slurm executor; skipped where it is not there);
and, for the cost of real execution, Fairway's engine alone on the same slice in
simulated time, with the same settings. All figures are in trace time (real seconds x compression).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.slurm_vs_fairway import repeat, slurm_alone
from benchmarks.slurm_vs_fairway.cluster import ROOT, BenchSlurm
from benchmarks.slurm_vs_fairway.latency import allocations, launch_latency, starts
from benchmarks.slurm_vs_fairway.stamps import tally
from scheduler_core.whatif.replay import ENGINE, replay_trace, trace_config
from scheduler_core.whatif.run_figures import RunFigures, figures_table
from scheduler_core.whatif.traces import (
    TraceCluster,
    TraceJob,
    parse_time,
    read_team_nodes,
    read_trace,
    trace_slice,
)

TRACES = ROOT.parent / "shared" / "traces"
# windows with several teams over their share, multi-GPU gangs, and a median job long
# enough (about 1,000 s, 10 s at 100x) for Slurm's one-second tick
FULL = {"start": "2017-10-05T14:30", "hours": 4.0, "nodes": 8, "cap_hours": 3.0}
QUICK = {"start": "2017-10-23T07:30", "hours": 1.0, "nodes": 4, "cap_hours": 1.0}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.slurm_vs_fairway")
    parser.add_argument("--quick", action="store_true", help="a smaller slice (< 5 min)")
    parser.add_argument("--trace", type=Path, default=TRACES / "philly.csv")
    parser.add_argument(
        "--team-nodes", type=Path, default=None,
        help="vc,node num CSV (default: philly_vc.csv beside the trace)",
    )  # fmt: skip
    parser.add_argument("--start", help="trace window start, e.g. 2017-10-25T23:30")
    parser.add_argument("--hours", type=float, help="hours of arrivals in the window")
    parser.add_argument("--nodes", type=int, help="Slurm nodes of 8 fake GPUs")
    parser.add_argument("--cap-hours", type=float, help="longest job duration kept")
    parser.add_argument("--compression", type=float, default=100.0)
    parser.add_argument("--sides", default="engine,slurm,fairway",
                        help="which of engine,slurm,fairway to run")  # fmt: skip
    parser.add_argument("--slurm-dir", type=Path, default=ROOT / "var" / "slurm-bench")
    parser.add_argument("--runs", type=int, default=1,
                        help="run it N times, each in a process of its own; ranges, medians "
                        "and the goals over the runs after the runs' own tables")  # fmt: skip
    parser.add_argument("--figures-out", type=Path, help=argparse.SUPPRESS)  # for --runs
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def load_slice(args: argparse.Namespace) -> tuple[list[TraceJob], TraceCluster]:
    if not args.trace.is_file():
        raise SystemExit(
            f"no trace at {args.trace}: give --trace PATH (Philly's CSV: "
            "timestamp,duration,num_gpus,cluster; see ../shared/traces/README.md)"
        )
    team_file = args.team_nodes or args.trace.with_name("philly_vc.csv")
    team_nodes = read_team_nodes(team_file) if team_file.is_file() else None
    jobs = read_trace(
        args.trace, start=parse_time(args.start), hours=args.hours, cap_hours=args.cap_hours
    )
    # a new pool's settings: the lab profile
    return trace_slice(jobs, args.nodes, 8, team_nodes, config=trace_config(None))


def distortions(jobs: list[TraceJob], args: argparse.Namespace) -> list[str]:
    """What the chosen compression distorts, in numbers for this slice."""
    c = args.compression
    short = sum(1 for j in jobs if j.duration / c < 1.0)
    median = statistics.median(j.duration for j in jobs) / c if jobs else 0.0
    return [
        f"compression {c:g}x: the median job runs {median:.1f} s; {short} of {len(jobs)} "
        "jobs run under 1 s, where Slurm's ~1 s scheduling tick dominates",
        f"Slurm's tick (~1 s) is {c / 60:.1f} trace-minutes; fair-share factors are "
        f"recomputed once a real minute (PriorityCalcPeriod's minimum) = {c:.0f} "
        "trace-minutes; time limits are whole minutes (backfill sees limits up to "
        f"{c:.0f} trace-minutes longer than the job)",
        f"durations are capped at {args.cap_hours:g} h (Philly's long tail would not fit "
        "the run); every job is a sleeping process, so there is no real GPU work",
    ]


def run_engine(jobs: list[TraceJob], cluster: TraceCluster) -> tuple[RunFigures, float]:
    cpu = time.process_time()
    figures = replay_trace(jobs, cluster, step_seconds=60.0, schedulers=[ENGINE])[ENGINE]
    return figures, time.process_time() - cpu


def run_slurm(
    jobs: list[TraceJob], cluster: TraceCluster, args: argparse.Namespace, bench: BenchSlurm
) -> tuple[RunFigures, str]:
    client = bench.start()
    bench.add_accounts(client, cluster.quotas)
    stamps = args.slurm_dir / "stamps-slurm"
    stamps.mkdir(parents=True, exist_ok=True)
    for old in stamps.glob("*.txt"):
        old.unlink()
    cpu = bench.controller_cpu_seconds()
    t0 = time.time() + 2.0
    submitted = slurm_alone.replay(
        client, jobs, compression=args.compression, gpus_per_node=8, stamps=stamps, t0=t0,
        log=log,
    )  # fmt: skip
    spent = bench.controller_cpu_seconds() - cpu
    allocated = allocations(bench.directory / "log" / "slurmctld.log", t0 - 2.0)
    began = {item.job_id: starts(item.stamp) for item in submitted if item.job_id is not None}
    text = f"slurmctld {spent:.1f} s; allocation to process start p50 " + launch_latency(
        allocated, began
    )
    return tally(submitted, cluster, t0, args.compression), text


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if args.runs > 1:
        return main_over_runs(args)
    sides = set(args.sides.split(","))
    jobs, cluster = load_slice(args)
    started = time.monotonic()
    work = sum(j.gpus * j.duration for j in jobs) / 3600
    print(
        f"Philly {args.start} + {args.hours:g} h: {len(jobs)} jobs "
        f"({sum(1 for j in jobs if j.gpus > 1)} multi-GPU, largest {max(j.gpus for j in jobs)} "
        f"GPUs), {work:.0f} GPU-hours, on {cluster.nodes} nodes x 8 GPUs; quotas "
        + ", ".join(f"{t} {q:.1f}" for t, q in sorted(cluster.quotas.items()))
    )
    for line in distortions(jobs, args):
        print("  - " + line)
    runs: dict[str, RunFigures] = {}
    cpu: dict[str, str] = {}
    if "engine" in sides:
        runs["engine alone (simulated)"], spent = run_engine(jobs, cluster)
        cpu["engine alone (simulated)"] = f"engine {spent:.1f} s"
        log("engine alone: done")
    bench = BenchSlurm(args.slurm_dir, args.nodes, 8)
    try:
        if "slurm" in sides:
            runs[repeat.SLURM], cpu[repeat.SLURM] = run_slurm(jobs, cluster, args, bench)
            log("slurm alone: done")
        if "fairway" in sides:
            fairway = fairway_side()
            if fairway is None:
                print("fairway on slurm: not run (the Slurm executor is not in this build)")
            else:
                runs[repeat.FAIRWAY], cpu[repeat.FAIRWAY] = fairway(jobs, cluster, args, bench, log)
    finally:
        bench.stop()
    print()
    for line in figures_table(runs):
        print(line)
    for line in goals(runs):
        print(line)
    if args.figures_out is not None:
        repeat.write_figures(args.figures_out, runs)
    width = max(len(k) for k in cpu) if cpu else 0
    print("scheduler CPU time, and how long a job takes to start:")
    for label, text in cpu.items():
        print(f"  {label.ljust(width)}  {text}")
    print(
        f"wall time {math.ceil(time.monotonic() - started)} s (machine shared: figures are noisy)"
    )
    return 0


def main_over_runs(args: argparse.Namespace) -> int:
    """`--runs N`: N runs, each printing its own table, then ranges, medians and goals."""
    load_slice(args)  # a missing trace is said once, before any run
    started = time.monotonic()
    done = repeat.repeat(args, log)
    print(f"\n=== {len(done)} of {args.runs} runs finished ===")
    for line in repeat.summary(done) + repeat.goals_over_runs(done, goal_rows):
        print(line)
    print(f"wall time {math.ceil(time.monotonic() - started)} s for {args.runs} runs")
    return 0 if len(done) == args.runs else 1


def goals(runs: dict[str, RunFigures]) -> list[str]:
    """Issue 31's goals for Fairway on Slurm against Slurm alone, from this run (the
    release-to-process goal, p50 under 1 s, is read from the line below them)."""
    slurm, fairway = runs.get(repeat.SLURM), runs.get(repeat.FAIRWAY)
    if slurm is None or fairway is None:
        return []
    return ["goals (issue 31), Fairway on Slurm against Slurm alone:"] + [
        f"  {name}: {figures}: {'MET' if ok else 'NOT MET'}"
        for name, figures, ok in goal_rows(slurm, fairway)
    ]


def goal_rows(slurm: RunFigures, fairway: RunFigures) -> list[tuple[str, str, bool]]:
    """(goal, figures, met) of issue 31's judged goals for one pair of runs."""
    longer = fairway.makespan_hours / slurm.makespan_hours - 1 if slurm.makespan_hours else 0.0
    return [
        (
            "fairness deviation at most half of Slurm's",
            f"{fairway.fairness_deviation:.3f} against {slurm.fairness_deviation:.3f}",
            fairway.fairness_deviation <= slurm.fairness_deviation / 2,
        ),
        (
            "mean completion time no worse",
            f"{fairway.mean_completion_hours:.2f} h against {slurm.mean_completion_hours:.2f} h",
            fairway.mean_completion_hours <= slurm.mean_completion_hours,
        ),
        (
            "makespan within 2 %",
            f"{fairway.makespan_hours:.2f} h against {slurm.makespan_hours:.2f} h ({longer:+.1%})",
            longer <= 0.02,
        ),
    ]


def fairway_side() -> Callable[..., tuple[RunFigures, str]] | None:
    """The Fairway-on-Slurm side, where this build has it."""
    try:
        from benchmarks.slurm_vs_fairway.fairway_side import run as run_fairway
    except ImportError:
        return None
    return run_fairway
