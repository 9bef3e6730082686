"""`fairway cancel`: stop workloads for good."""

from __future__ import annotations

import argparse
import sys

from fairway_cli import workloads
from fairway_cli.client import ApiClient
from fairway_cli.errors import OK, CliError

HELP = "cancel workloads: free their pods; they will not run again"
EPILOG = """\
examples:
  fairway cancel 42
  fairway cancel nlp/bert sweep-7
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cancel",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "workloads", nargs="+", metavar="WORKLOAD", help="id, PROJECT/NAME or unique name"
    )
    parser.set_defaults(handler=run, needs_client=True)


def run(args: argparse.Namespace, client: ApiClient) -> int:
    """Cancel each one; a failure is reported and the others are still cancelled."""
    worst = OK
    for ref in args.workloads:
        try:
            workload = workloads.find(client, ref)
            done = client.post(f"workloads/{workload['id']}/cancel/")
        except CliError as exc:
            print(f"fairway: error: {ref}: {exc}", file=sys.stderr)
            worst = max(worst, exc.exit_code)
            continue
        print(f"Cancelled workload {done['id']} ({done['project']}/{done['name']})")
    return worst
