"""`manage.py replay_trace PATH --start T --hours H --nodes N`: replay a job trace (Philly
columns) on a synthetic cluster through the engine, FIFO and FIFO with backfill, and print
their figures side by side (`--json`: machine-readable). Several `--start`s (and
`--windows`) replay several slices side by side; `--load L` instead of `--nodes` sizes
each slice's cluster for the same offered load, so that one day's tuning can be checked
on others.

Thin: reading, replaying and the figures live in scheduler_core.whatif (traces, replay,
reference, run_figures).
"""

from __future__ import annotations

import json
from argparse import ArgumentTypeError
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_core.whatif.replay import SCHEDULERS, replay_trace
from scheduler_core.whatif.run_figures import RunFigures, figures_table
from scheduler_core.whatif.scenarios.errors import ScenarioError
from scheduler_core.whatif.traces import (
    TraceCluster,
    TraceJob,
    fits,
    parse_time,
    read_team_nodes,
    read_trace,
    team_quotas,
)


def _setting(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` of `--config`; the value is JSON when it parses as JSON (numbers,
    true/false, objects), else a string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def _time(text: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError as exc:
        raise ArgumentTypeError(str(exc)) from exc


class Command(BaseCommand):
    # the replay touches neither the database nor URLs
    requires_system_checks: list[str] = []
    help = (
        "Replay a job trace (CSV: timestamp, duration, num_gpus, cluster) through the engine, "
        "FIFO and FIFO with backfill; print makespan, completion and queueing times, "
        "utilisation, fairness, preemptions, moves and lost GPU-hours."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="trace CSV (Philly columns)")
        parser.add_argument(
            "--start",
            type=_time,
            action="append",
            required=True,
            help="window start, UTC; repeatable: several slices of the trace side by side",
        )
        parser.add_argument("--hours", type=float, required=True, help="window length")
        size = parser.add_mutually_exclusive_group(required=True)
        size.add_argument("--nodes", type=int, help="nodes in the cluster")
        size.add_argument(
            "--load",
            type=float,
            help="size each window's cluster for this offered load instead: the nodes whose "
            "GPUs over the window come closest to the jobs' GPU-hours divided by it (1.23 "
            "on the issue's Philly day is 48 nodes), so that busy and quiet slices compare",
        )
        parser.add_argument("--gpus-per-node", type=int, default=8)
        parser.add_argument(
            "--vc", type=Path, help="nodes per team (vc,node num); default: equal quotas"
        )
        parser.add_argument("--step", type=float, default=60.0, help="seconds between cycles")
        parser.add_argument(
            "--cap-hours", type=float, default=24.0, help="longest job duration, hours"
        )
        parser.add_argument(
            "--weigh-moves",
            action="store_true",
            help="the pool weighs the work a consolidation move throws away against the "
            "time the job waited (consolidation_weighs_lost_work; off: KAI's behaviour)",
        )
        parser.add_argument(
            "--config",
            type=_setting,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a scheduler setting of the pool, as a scenario's `config` takes it "
            "(e.g. min_guaranteed_runtime=3600, fairshare_mode=time_based, "
            "consolidation=false); repeatable",
        )
        parser.add_argument(
            "--only",
            choices=SCHEDULERS,
            action="append",
            help="replay only with this scheduler (repeatable; default: all three)",
        )
        parser.add_argument(
            "--windows",
            type=int,
            default=1,
            help="replay this many consecutive windows of --hours each, side by side "
            "(a difference between settings that one window shows may be chance)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        config = dict(options["config"])
        if options["weigh_moves"]:
            config["consolidation_weighs_lost_work"] = True
        if options["windows"] < 1:
            raise CommandError("--windows must be at least 1")
        if not options["hours"] > 0:
            raise CommandError("--hours must be greater than 0")
        if options["nodes"] is not None and options["nodes"] < 1:
            raise CommandError("--nodes must be at least 1")
        if options["gpus_per_node"] < 1:
            raise CommandError("--gpus-per-node must be at least 1")
        if options["load"] is not None and not options["load"] > 0:
            raise CommandError("--load must be greater than 0")
        try:
            team_nodes = read_team_nodes(options["vc"]) if options["vc"] else None
        except (OSError, KeyError, ValueError) as exc:
            raise CommandError(f"cannot read the trace: {exc}") from exc
        span = timedelta(hours=options["hours"])
        replays = [
            self._replay(start + k * span, options, config, team_nodes)
            for start in options["start"]
            for k in range(options["windows"])
        ]
        if options["json"]:
            documents = [replay.document(config) for replay in replays]
            self.stdout.write(
                json.dumps(documents[0] if len(documents) == 1 else {"windows": documents})
            )
            return
        for replay in replays:
            self.stdout.write(replay.header(options["step"], config, len(replays) > 1))
        runs: dict[str, RunFigures] = {}
        for replay in replays:
            for label, figures in replay.runs.items():
                runs[label if len(replays) == 1 else f"{label} {replay.start:%m-%d %H:%M}"] = (
                    figures
                )
        for line in figures_table(runs):
            self.stdout.write(line)

    def _replay(
        self,
        start: datetime,
        options: dict[str, Any],
        config: dict[str, Any],
        team_nodes: dict[str, int] | None,
    ) -> WindowReplay:
        try:
            jobs = read_trace(
                options["path"], start=start, hours=options["hours"], cap_hours=options["cap_hours"]
            )
        except (OSError, KeyError, ValueError) as exc:
            raise CommandError(f"cannot read the trace: {exc}") from exc
        nodes = options["nodes"] or _nodes_for_load(
            jobs, options["hours"], options["gpus_per_node"], options["load"]
        )
        gpus = nodes * options["gpus_per_node"]
        cluster = TraceCluster(
            nodes,
            options["gpus_per_node"],
            team_quotas((j.team for j in jobs), gpus, team_nodes),
            config=config,
        )
        too_large = [j for j in jobs if not fits(j, cluster)]
        jobs = [j for j in jobs if fits(j, cluster)]
        try:
            runs = replay_trace(
                jobs,
                cluster,
                step_seconds=options["step"],
                on_progress=lambda label, hours: self.stderr.write(
                    f"{start:%m-%d %H:%M} {label}: {hours:g} h simulated"
                ),
                schedulers=options["only"] or SCHEDULERS,
            )
        except ScenarioError as exc:
            raise CommandError(f"bad --config: {exc}") from exc
        load = _offered_load(jobs, options["hours"], cluster)
        return WindowReplay(start, len(jobs), len(too_large), cluster, load, runs)


def _work_hours(jobs: list[TraceJob]) -> float:
    """The GPU-hours the jobs ask for."""
    return sum(j.gpus * j.duration for j in jobs) / 3600


def _nodes_for_load(jobs: list[TraceJob], hours: float, gpus_per_node: int, load: float) -> int:
    """The nodes (at least one) whose GPUs over `hours` come closest to the jobs'
    GPU-hours divided by `load`: the cluster on which they offer that load."""
    return max(round(_work_hours(jobs) / (hours * gpus_per_node * load)), 1)


def _offered_load(jobs: list[TraceJob], hours: float, cluster: TraceCluster) -> float:
    """The jobs' GPU-hours over what the cluster's GPUs give in the window."""
    return _work_hours(jobs) / (hours * cluster.nodes * cluster.gpus_per_node)


@dataclass(frozen=True)
class WindowReplay:
    """One window of the trace, replayed."""

    start: datetime
    jobs: int
    too_large: int
    cluster: TraceCluster
    offered_load: float
    runs: dict[str, RunFigures]

    def document(self, config: dict[str, Any]) -> dict[str, Any]:
        """The window's figures as JSON."""
        return {
            "start": self.start.isoformat(),
            "jobs": self.jobs,
            "left_out_too_large": self.too_large,
            "cluster": {"nodes": self.cluster.nodes, "gpus_per_node": self.cluster.gpus_per_node},
            "offered_load": round(self.offered_load, 3),
            "config": config,
            "quotas": {team: round(q, 4) for team, q in self.cluster.quotas.items()},
            "runs": {label: figures.to_json() for label, figures in self.runs.items()},
        }

    def header(self, step: float, config: dict[str, Any], dated: bool) -> str:
        """The line above the table: what was replayed on what."""
        return (
            (f"{self.start:%Y-%m-%d %H:%M}: " if dated else "")
            + f"{self.jobs} jobs on {self.cluster.nodes} nodes x "
            f"{self.cluster.gpus_per_node} GPUs (offered load {self.offered_load:.2f}), "
            f"a cycle every {step:g} s"
            + "".join(f"; {key}={json.dumps(value)}" for key, value in config.items())
            + (f"; {self.too_large} left out (larger than the cluster)" if self.too_large else "")
        )
