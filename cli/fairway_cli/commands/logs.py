"""`fairway logs`: what a workload's pods wrote, and `-f` to follow it.

Reads `GET /workloads/{id}/logs/?pod=&since=&tail=` (docs/agent.md, "Logs and usage"):
`{"pods": [{"pod", "run", "node", "offset", "next_offset", "text", "state",
"exit_code"}]}`, the newest run of each pod, `since` a byte offset into that run.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from fairway_cli import workloads
from fairway_cli.client import ApiClient
from fairway_cli.errors import OK, ApiError, CliError

HELP = "print a workload's logs (-f to follow until it finishes)"
EPILOG = """\
examples:
  fairway logs 42
  fairway logs nlp/bert --pod main-1 --tail 100
  fairway logs bert -f
"""
POLL_SECONDS = 2.0
NOT_SERVED = "this server does not serve logs"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "logs",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("workload", metavar="WORKLOAD", help="id, PROJECT/NAME or unique name")
    parser.add_argument("--pod", help="one pod, GROUP-INDEX (e.g. main-0); default: all pods")
    parser.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep printing until the workload finishes"
    )
    parser.add_argument(
        "--interval", type=float, default=POLL_SECONDS, help=argparse.SUPPRESS
    )  # seconds between polls with -f
    parser.set_defaults(handler=run, needs_client=True)


@dataclass
class PodCursor:
    """Where we are in one pod's newest run, and whether a line is half printed."""

    run: Any = None
    next_offset: int = 0
    at_line_start: bool = True


@dataclass
class LogReader:
    """Fetches and prints logs, remembering each pod's offset for the next poll."""

    client: ApiClient
    workload_id: int
    pod: str | None
    out: TextIO | None = None  # standard output
    cursors: dict[str, PodCursor] = field(default_factory=dict)
    prefix: bool = False

    def fetch(self, params: dict[str, str | int]) -> list[dict[str, Any]]:
        try:
            answer = self.client.get(f"workloads/{self.workload_id}/logs/", params)
        except ApiError as exc:
            if exc.status == 404 and (self.pod is None or "no API route" in exc.detail):
                raise CliError(NOT_SERVED) from None
            raise
        return list(answer.get("pods") or [])

    def first(self, tail: int | None) -> None:
        """Everything so far (or its last `tail` lines)."""
        params: dict[str, str | int] = {}
        if self.pod:
            params["pod"] = self.pod
        if tail is not None:
            params["tail"] = tail
        pods = self.fetch(params)
        self.prefix = self.pod is None and len(pods) > 1
        for entry in pods:
            self.show(entry)

    def poll(self, pod_names: list[str]) -> None:
        """What each pod wrote since the last call; a pod restarted in a new run starts over."""
        for name in pod_names:
            cursor = self.cursors.get(name)
            since = cursor.next_offset if cursor else 0
            for entry in self.fetch({"pod": name, "since": since}):
                if cursor is not None and entry.get("run") != cursor.run:
                    self.note(entry, f"new run {entry.get('run')} on {entry.get('node')}")
                    entry = next(iter(self.fetch({"pod": name, "since": 0})), entry)
                self.show(entry)

    def show(self, entry: dict[str, Any]) -> None:
        name = str(entry.get("pod"))
        cursor = self.cursors.setdefault(name, PodCursor())
        if cursor.run is not None and entry.get("run") != cursor.run:
            cursor.at_line_start = True
        cursor.run = entry.get("run")
        cursor.next_offset = int(entry.get("next_offset") or cursor.next_offset)
        text = entry.get("text") or ""
        if not text:
            return
        if self.prefix:
            text = _prefixed(text, f"[{name}] ", cursor.at_line_start)
        cursor.at_line_start = text.endswith("\n")
        out = self.out or sys.stdout
        out.write(text)
        out.flush()

    def note(self, entry: dict[str, Any], message: str) -> None:
        print(f"--- {entry.get('pod')}: {message} ---", file=sys.stderr)


def _prefixed(text: str, prefix: str, at_line_start: bool) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(
        (prefix if i > 0 or at_line_start else "") + line for i, line in enumerate(lines)
    )


def run(args: argparse.Namespace, client: ApiClient) -> int:
    workload = workloads.find(client, args.workload)
    reader = LogReader(client=client, workload_id=workload["id"], pod=args.pod)
    reader.first(args.tail)
    if not args.follow:
        return OK
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends following, not an error
        follow(reader, workload, args.interval)
    return OK


def follow(reader: LogReader, workload: dict[str, Any], interval: float) -> None:
    """Poll until the workload is finished, then print what its pods wrote last."""
    while workload["status"] not in workloads.TERMINAL:
        time.sleep(interval)
        workload = reader.client.get(f"workloads/{workload['id']}/")
        reader.prefix = reader.prefix or (reader.pod is None and len(_pods(reader, workload)) > 1)
        reader.poll(_pods(reader, workload))


def _pods(reader: LogReader, workload: dict[str, Any]) -> list[str]:
    """The pods to poll: the one asked for, else those seen so far and those placed now."""
    if reader.pod:
        return [reader.pod]
    placed = [f"{p['group']}-{p['pod_index']}" for p in workload.get("placements") or []]
    return list(dict.fromkeys([*reader.cursors, *placed]))
