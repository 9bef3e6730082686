"""`manage.py replay_trace PATH --start T --hours H --nodes N`: replay a job trace (Philly
columns) on a synthetic cluster through the engine, FIFO and FIFO with backfill, and print
their figures side by side (`--json`: machine-readable).

Thin: reading, replaying and the figures live in scheduler_core.whatif (traces, replay,
reference, run_figures).
"""

from __future__ import annotations

import json
from argparse import ArgumentTypeError
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_core.whatif.replay import SCHEDULERS, replay_trace
from scheduler_core.whatif.run_figures import figures_table
from scheduler_core.whatif.scenarios.errors import ScenarioError
from scheduler_core.whatif.traces import (
    TraceCluster,
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
        parser.add_argument("--start", type=_time, required=True, help="window start, UTC")
        parser.add_argument("--hours", type=float, required=True, help="window length")
        parser.add_argument("--nodes", type=int, required=True, help="nodes in the cluster")
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
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            jobs = read_trace(
                options["path"],
                start=options["start"],
                hours=options["hours"],
                cap_hours=options["cap_hours"],
            )
            team_nodes = read_team_nodes(options["vc"]) if options["vc"] else None
        except (OSError, KeyError, ValueError) as exc:
            raise CommandError(f"cannot read the trace: {exc}") from exc
        gpus = options["nodes"] * options["gpus_per_node"]
        config = dict(options["config"])
        if options["weigh_moves"]:
            config["consolidation_weighs_lost_work"] = True
        cluster = TraceCluster(
            options["nodes"],
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
                    f"{label}: {hours:g} h simulated"
                ),
                schedulers=options["only"] or SCHEDULERS,
            )
        except ScenarioError as exc:
            raise CommandError(f"bad --config: {exc}") from exc
        if options["json"]:
            document = {
                "jobs": len(jobs),
                "left_out_too_large": len(too_large),
                "cluster": {"nodes": cluster.nodes, "gpus_per_node": cluster.gpus_per_node},
                "config": config,
                "quotas": {team: round(q, 4) for team, q in cluster.quotas.items()},
                "runs": {label: figures.to_json() for label, figures in runs.items()},
            }
            self.stdout.write(json.dumps(document))
            return
        self.stdout.write(
            f"{len(jobs)} jobs on {cluster.nodes} nodes x {cluster.gpus_per_node} GPUs, "
            f"a cycle every {options['step']:g} s"
            + "".join(f"; {key}={json.dumps(value)}" for key, value in config.items())
            + (f"; {len(too_large)} left out (larger than the cluster)" if too_large else "")
        )
        for line in figures_table(runs):
            self.stdout.write(line)
