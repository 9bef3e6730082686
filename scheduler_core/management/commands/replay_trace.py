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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_core.engine.profiles import DEFAULT_PROFILE_FOR_LABS, PROFILES
from scheduler_core.whatif.busy_windows import busiest_windows
from scheduler_core.whatif.replay import SCHEDULERS, WindowReplay, replay_window, trace_config
from scheduler_core.whatif.run_figures import RunFigures, figures_table
from scheduler_core.whatif.scenarios.errors import ScenarioError
from scheduler_core.whatif.traces import parse_time, read_team_nodes, read_trace


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
            default=[],
            help="window start, UTC; repeatable: several slices of the trace side by side",
        )
        parser.add_argument(
            "--busiest",
            type=int,
            default=0,
            metavar="N",
            help="also replay the N busiest windows of --hours in the trace (the most "
            "GPU-hours submitted, durations capped; starting on the hour, no two less than "
            "two windows apart), busiest first",
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
            "--profile",
            choices=PROFILES,
            default=DEFAULT_PROFILE_FOR_LABS,
            help="the pool's policy profile: lab (the default, what a new pool gets) or kai "
            "(exactly KAI-Scheduler's settings); --config settings win over it",
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
        config = trace_config({"profile": options["profile"], **dict(options["config"])})
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
        if options["busiest"] < 0:
            raise CommandError("--busiest must be at least 0")
        options["start"] = options["start"] + self._busiest(options)
        if not options["start"]:
            raise CommandError("give a window: --start, or --busiest N")
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

    def _busiest(self, options: dict[str, Any]) -> list[datetime]:
        """The starts of the --busiest windows, each reported with its GPU-hours."""
        if not options["busiest"]:
            return []
        origin = datetime(1970, 1, 1, tzinfo=UTC)
        try:
            jobs = read_trace(
                options["path"], start=origin, hours=1e7, cap_hours=options["cap_hours"]
            )
        except (OSError, KeyError, ValueError) as exc:
            raise CommandError(f"cannot read the trace: {exc}") from exc
        found = busiest_windows(
            jobs, origin=origin, hours=options["hours"], count=options["busiest"]
        )
        for start, load in found:
            self.stderr.write(
                f"busy window {start:%Y-%m-%dT%H:%M}: {load:,.0f} GPU-hours submitted"
            )
        return [start for start, _ in found]

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
        try:
            return replay_window(
                jobs,
                start=start,
                hours=options["hours"],
                nodes=options["nodes"],
                load=options["load"],
                gpus_per_node=options["gpus_per_node"],
                config=config,
                team_nodes=team_nodes,
                step_seconds=options["step"],
                on_progress=lambda label, hours: self.stderr.write(
                    f"{start:%m-%d %H:%M} {label}: {hours:g} h simulated"
                ),
                schedulers=options["only"] or SCHEDULERS,
            )
        except ScenarioError as exc:
            raise CommandError(f"bad --config: {exc}") from exc
