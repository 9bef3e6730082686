"""`fairway list`: the workloads you can see, unfinished ones unless asked."""

from __future__ import annotations

import argparse

from fairway_cli.client import ApiClient
from fairway_cli.errors import OK
from fairway_cli.output import print_json, table
from fairway_cli.workloads import LIST_COLUMNS, UNFINISHED, list_row

HELP = "list workloads (pending, running and suspended unless --all or --status)"
EPILOG = """\
examples:
  fairway list
  fairway list --project nlp --status pending
  fairway list --all --json | jq '.[] | select(.status == "failed") | .id'
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "list",
        aliases=["ls"],
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--project", "-p", help="only this project")
    parser.add_argument(
        "--status",
        action="append",
        metavar="STATUS",
        help="pending, running, suspended, completed, failed or cancelled; repeat for several",
    )
    parser.add_argument("--all", "-A", action="store_true", help="finished workloads too")
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.set_defaults(handler=run, needs_client=True)


def run(args: argparse.Namespace, client: ApiClient) -> int:
    params: dict[str, str | list[str]] = {}
    if args.project:
        params["project"] = args.project
    if args.status:
        params["status"] = args.status
    elif not args.all:
        params["status"] = list(UNFINISHED)
    workloads = list(client.pages("workloads/", params))
    if args.json:
        print_json(workloads)
    elif workloads:
        print(table(LIST_COLUMNS, [list_row(w) for w in workloads]))
    else:
        print("No workloads." if args.all or args.status else "No unfinished workloads.")
    return OK
