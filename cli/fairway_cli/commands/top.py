"""`fairway top`: your unfinished workloads, redrawn every few seconds."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any

from fairway_cli import workloads
from fairway_cli.client import ApiClient
from fairway_cli.errors import OK
from fairway_cli.output import age, number, print_json, table

HELP = "a live table of your unfinished workloads"
EPILOG = """\
examples:
  fairway top
  fairway top --project nlp --interval 5
  fairway top --once
"""
CLEAR = "\033[H\033[2J"
COLUMNS = ("ID", "NAME", "PROJECT", "STATUS", "PODS", "GPUS", "NODES", "AGE", "REASON")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "top",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--project", "-p", help="everyone's workloads in this project instead of yours"
    )
    parser.add_argument("--interval", "-n", type=float, default=2.0, help="seconds between redraws")
    parser.add_argument("--once", action="store_true", help="print once and exit (for scripts)")
    parser.add_argument("--json", action="store_true", help="print the workloads once as JSON")
    parser.set_defaults(handler=run, needs_client=True)


def run(args: argparse.Namespace, client: ApiClient) -> int:
    params: dict[str, str | list[str]] = {"status": list(workloads.UNFINISHED)}
    if args.project:
        params["project"] = args.project
        title = f"project {args.project}"
    else:
        params["submitted_by"] = client.get("me/")["username"]
        title = f"{params['submitted_by']}'s workloads"
    if args.json:
        print_json(list(client.pages("workloads/", params)))
        return OK
    try:
        while True:
            screen = render(title, client.url, list(client.pages("workloads/", params)))
            if args.once:
                print(screen)
                return OK
            sys.stdout.write(CLEAR + screen + "\n")
            sys.stdout.flush()
            time.sleep(max(args.interval, 0.2))
    except KeyboardInterrupt:
        return OK


def render(title: str, url: str, items: list[dict[str, Any]]) -> str:
    """The header line, a summary, and the table."""
    running = [w for w in items if w["status"] == "running"]
    gpus = sum(w.get("total_gpus") or 0 for w in running)
    header = f"fairway top - {title} on {url} - {datetime.now().strftime('%H:%M:%S')}"
    summary = (
        f"{len(running)} running ({number(gpus)} GPUs), "
        f"{sum(w['status'] == 'pending' for w in items)} pending, "
        f"{sum(w['status'] == 'suspended' for w in items)} suspended"
    )
    if not items:
        return f"{header}\n{summary}\n\nNo unfinished workloads."
    rows = [
        [
            str(w["id"]),
            w["name"],
            w["project"],
            w["status"],
            f"{w.get('running_pods', 0)}/{w['pods']}",
            workloads.gpus_label(w),
            ",".join(w.get("nodes") or []) or "-",
            age(w.get("submitted_at")),
            workloads.reason_label(w, 40),
        ]
        for w in items
    ]
    return f"{header}\n{summary}\n\n{table(COLUMNS, rows)}"
