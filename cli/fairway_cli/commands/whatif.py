"""`fairway whatif`: what-if runs in a worker (admins): replay a job trace against FIFO
and backfill, or play a scenario file; follow a run's progress; read its figures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fairway_cli import simulations
from fairway_cli.client import ApiClient
from fairway_cli.documents import read_document, read_text
from fairway_cli.errors import OK, USAGE
from fairway_cli.output import print_json, table

HELP = "what-if runs (admins): replay a job trace or a scenario in a worker, read the figures"
EPILOG = """\
examples:
  fairway whatif trace philly.csv --start 2017-10-25T19:00 --hours 24 --nodes 48 \\
      --team-nodes philly_vc.csv --config reserve_for_gangs=true
  fairway whatif scenario cluster.yaml --horizon 7200
  fairway whatif live --changes quota-cut.json
  fairway whatif list
  fairway whatif show 12 --wait

A run goes on in a worker whatever happens to the command; --no-wait only prints its id.
"""
TRACE_EPILOG = """\
The trace is a CSV with Philly's columns: timestamp (UTC), duration (seconds), num_gpus and
cluster (the team). Each team becomes a project; --team-nodes gives their deserved quotas
in proportion to their nodes (a `vc,node num` CSV, as philly_vc.csv), else equal ones.
The pool is in the lab profile (what a new pool gets) unless --config profile=kai
(exactly KAI-Scheduler's settings). --config takes any pool setting a scenario's `config`
takes, on top of the profile, e.g.
  --config profile=kai --config reclaim_weighs_lost_work=true
  --config reserve_for_gangs=false --config max_preemptions_per_workload=1
"""

LIVE_EPILOG = """\
A changes file, JSON or YAML (every key optional; the API's schema has them all):
  {"quotas": [{"project": "nlp", "pool": "a100", "gpus": 4}],
   "weights": [{"department": "research", "over_quota_weight": 2}],
   "pools": [{"pool": "a100", "reclaim_weighs_lost_work": true}],
   "add_nodes": [{"name": "extra", "pool": "a100", "gpus": 8, "count": 2}],
   "remove_nodes": ["gpu-7"]}
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "whatif",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(title="what-if commands", metavar="WHAT")
    parser.set_defaults(handler=_usage, needs_client=False, parser=parser)

    trace = commands.add_parser(
        "trace",
        help="replay a window of a job trace: the engine, FIFO and FIFO with backfill",
        description="Replay the jobs a trace submits in one window on a synthetic cluster, "
        "with Fairway's engine and two reference schedulers, and print their figures side "
        "by side (as `manage.py replay_trace`).",
        epilog=TRACE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trace.add_argument("path", type=Path, metavar="TRACE.csv", help="the job trace")
    trace.add_argument("--start", required=True, help="window start, UTC: 2017-10-25T19:00")
    trace.add_argument("--hours", type=float, help="window length (default 24)")
    size = trace.add_mutually_exclusive_group(required=True)
    size.add_argument("--nodes", type=int, help="nodes in the cluster")
    size.add_argument("--load", type=float, help="or: size the cluster for this offered load")
    trace.add_argument("--gpus-per-node", type=int, help="GPUs per node (default 8)")
    trace.add_argument("--cap-hours", type=float, help="longest job, hours (default 24)")
    trace.add_argument("--step", type=float, metavar="SECONDS", help="between cycles (60)")
    trace.add_argument(
        "--team-nodes", type=Path, metavar="VC.csv", help="nodes per team: `vc,node num` CSV"
    )
    trace.add_argument(
        "--config",
        type=simulations.setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a pool setting; repeat for several",
    )
    _common(trace)
    trace.set_defaults(handler=run_trace, needs_client=True)

    scenario = commands.add_parser(
        "scenario",
        help="play a scenario file (YAML or JSON, FORMAT.md) and show each project's figures",
    )
    scenario.add_argument("path", type=Path, metavar="FILE", help="the scenario")
    scenario.add_argument(
        "--horizon", type=int, metavar="SECONDS", help="simulated seconds (default 3600)"
    )
    _common(scenario)
    scenario.set_defaults(handler=run_scenario, needs_client=True)

    live = commands.add_parser(
        "live",
        help="copy the cluster as it is now and try changes on it, against the copy unchanged",
        description="Copy the live cluster (what you may see of it) and replay it with and "
        "without the changes: quotas, weights, pool settings, nodes added or removed.",
        epilog=LIVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    live.add_argument(
        "--changes",
        type=Path,
        metavar="FILE",
        help="the changes, JSON or YAML (none: the cluster as it goes on)",
    )
    live.add_argument(
        "--horizon", type=int, metavar="SECONDS", help="simulated seconds (default 3600)"
    )
    _common(live)
    live.set_defaults(handler=run_live, needs_client=True)

    show = commands.add_parser("show", help="a run's progress, or its figures once done")
    show.add_argument("id", type=int, metavar="ID")
    show.add_argument("--wait", action="store_true", help="until it has succeeded or failed")
    show.add_argument("--json", action="store_true", help="the run as the API gives it")
    show.set_defaults(handler=run_show, needs_client=True)

    listing = commands.add_parser("list", aliases=["ls"], help="your what-if runs, newest first")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(handler=run_list, needs_client=True)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", help="a name for the run (default: the file's and window's)")
    parser.add_argument(
        "--no-wait", action="store_true", help="print the run's id and leave it to its worker"
    )
    parser.add_argument("--json", action="store_true", help="print the run as JSON")


def _usage(args: argparse.Namespace, client: None) -> int:
    args.parser.print_help(sys.stderr)
    return USAGE


def trace_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `trace` options of POST /simulations/ for these arguments: only those given."""
    options: dict[str, Any] = {"start": args.start}
    given = {
        "hours": args.hours,
        "nodes": args.nodes,
        "load": args.load,
        "gpus_per_node": args.gpus_per_node,
        "cap_hours": args.cap_hours,
        "step_seconds": args.step,
    }
    options.update({key: value for key, value in given.items() if value is not None})
    if args.team_nodes is not None:
        options["team_nodes"] = simulations.read_team_nodes(args.team_nodes)
    if args.config:
        options["config"] = dict(args.config)
    return options


def run_trace(args: argparse.Namespace, client: ApiClient) -> int:
    body = {
        "name": args.name or f"{args.path.stem} {args.start}",
        "source": "trace",
        "trace_text": read_text(args.path, "trace"),
        "trace": trace_options(args),
    }
    return _start(args, client, body)


def run_scenario(args: argparse.Namespace, client: ApiClient) -> int:
    body: dict[str, Any] = {
        "name": args.name or args.path.stem,
        "source": "scenario",
        "scenario_text": read_text(args.path, "scenario"),
    }
    if args.horizon is not None:
        body["horizon"] = args.horizon
    return _start(args, client, body)


def run_live(args: argparse.Namespace, client: ApiClient) -> int:
    default = "live" if args.changes is None else f"live: {args.changes.stem}"
    body: dict[str, Any] = {"name": args.name or default, "source": "live"}
    if args.changes is not None:
        body["changes"] = read_document(args.changes)
    if args.horizon is not None:
        body["horizon"] = args.horizon
    return _start(args, client, body)


def _start(args: argparse.Namespace, client: ApiClient, body: dict[str, Any]) -> int:
    run = client.post("simulations/", body)
    if args.no_wait:
        if args.json:
            print_json(run)
        else:
            print(f"Started what-if run {run['id']} ({run['name']}): {run['status']}")
        return OK
    return _finish(args, client, run)


def run_show(args: argparse.Namespace, client: ApiClient) -> int:
    run = client.get(f"simulations/{args.id}/")
    if not args.wait:
        _print(args, run)
        return OK
    return _finish(args, client, run)


def _finish(args: argparse.Namespace, client: ApiClient, run: dict[str, Any]) -> int:
    """Wait for the run, saying its progress on stderr, then print it."""
    run = simulations.wait_for(
        client, run, say=lambda line: print(line, file=sys.stderr, flush=True)
    )
    _print(args, run)
    simulations.check_finished(run)
    return OK


def _print(args: argparse.Namespace, run: dict[str, Any]) -> None:
    if args.json:
        print_json(run)
    else:
        print(simulations.outcome(run))


def run_list(args: argparse.Namespace, client: ApiClient) -> int:
    runs = list(client.pages("simulations/"))
    if args.json:
        print_json(runs)
    elif runs:
        print(table(simulations.LIST_COLUMNS, [simulations.list_row(r) for r in runs]))
    else:
        print("No what-if runs.")
    return OK
