"""What-if runs as the CLI shows them: waiting for one with its progress, and its outcome
as tables (a trace run's figures side by side; a scenario's projects)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairway_cli import documents
from fairway_cli.client import ApiClient
from fairway_cli.errors import CliError, UsageError
from fairway_cli.output import NONE, age, number, shorten, table

POLL_SECONDS = 1.0
FINISHED = ("succeeded", "failed")
LIST_COLUMNS = ("ID", "NAME", "SOURCE", "STATUS", "CREATED", "PROGRESS")


def setting(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` for a pool setting: the value as JSON where it reads as JSON (true, 3600,
    0.5), else as text (fairshare_mode=time_based)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def read_team_nodes(path: Path) -> dict[str, int]:
    """Nodes per team from a `vc,node num` CSV file (the trace's philly_vc.csv)."""
    reader = csv.DictReader(documents.read_text(path, "team sizes").splitlines())
    if not {"vc", "node num"} <= set(reader.fieldnames or []):
        raise UsageError(f"{path}: the team sizes need the columns vc,node num")
    sizes: dict[str, int] = {}
    for row in reader:
        try:
            sizes[row["vc"]] = int(row["node num"])
        except (TypeError, ValueError):
            raise UsageError(
                f"{path}, line {reader.line_num}: not a whole number of nodes: {row['node num']!r}"
            ) from None
    return sizes


def wait_for(
    client: ApiClient,
    run: dict[str, Any],
    *,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Poll the run until it has succeeded or failed, saying each new progress message;
    its last state. Interrupted, the run goes on in its worker, and the user is told how
    to come back to it."""
    said = ""
    try:
        while run["status"] not in FINISHED:
            line = f"[{run['progress'] * 100:3.0f}%] {run['progress_message']}"
            if line != said:
                say(line)
                said = line
            time.sleep(POLL_SECONDS)
            run = client.get(f"simulations/{run['id']}/")
    except KeyboardInterrupt:
        print(
            f"\nfairway: what-if run {run['id']} goes on in a worker; see it with "
            f"`fairway whatif show {run['id']} --wait`",
            file=sys.stderr,
        )
        raise
    return run


def outcome(run: dict[str, Any]) -> str:
    """What a finished (or unfinished) run shows: its line, then its figures."""
    title = f"What-if run {run['id']} ({run['name']}): {run['status']}"
    if run["status"] == "failed":
        return f"{title}: {run['error']}"
    if run["status"] != "succeeded":
        return f"{title}, {run['progress'] * 100:.0f}%: {run['progress_message']}"
    result = run.get("result") or {}
    if run.get("figures"):
        return "\n".join([title, result.get("header", ""), "", figures_table(run["figures"])])
    return "\n".join([title, *scenario_lines(result)])


def figures_table(figures: dict[str, Any]) -> str:
    """A trace run's figures, one row per figure and a column per scheduler."""
    headers = ["FIGURE", *(s.upper() for s in figures["schedulers"])]
    return table(headers, [[row["figure"], *row["values"]] for row in figures["rows"]])


def scenario_lines(result: dict[str, Any]) -> list[str]:
    """A scenario or live run: the changes tried, what they do in words, and each
    project's figures (baseline, and with the changes when there are some)."""
    runs = result.get("runs") or {}
    lines: list[str] = []
    changes = result.get("changes_text") or []
    if changes:
        lines.append("Changes: " + "; ".join(changes if isinstance(changes, list) else [changes]))
    comparison = result.get("comparison") or {}
    for row in [*comparison.get("gains", []), *comparison.get("reclaimed", [])]:
        lines.append(f"  {row['text']}")
    for label in ("baseline", "changed"):
        metrics = runs.get(label)
        if metrics:
            lines += ["", f"{label.capitalize()} run:", project_table(metrics)]
    return lines


def project_table(metrics: dict[str, Any]) -> str:
    """One run's projects: mean and peak GPUs held, mean wait, preemptions, workloads."""
    headers = ("PROJECT", "MEAN GPUS", "PEAK GPUS", "MEAN WAIT", "PREEMPTIONS", "DONE/ALL")
    rows = [
        [
            name,
            f"{p['mean_gpus']:.1f}",
            number(p["peak_gpus"]),
            _duration(p["mean_pending_seconds"]),
            str(p["preemptions"]),
            f"{p['completed']}/{p['workloads']}",
        ]
        for name, p in sorted((metrics.get("projects") or {}).items())
    ]
    cluster = metrics.get("cluster") or {}
    rows.append(
        [
            f"(cluster of {number(cluster.get('capacity_gpus'))} GPUs)",
            f"{cluster.get('mean_gpus', 0):.1f}",
            NONE,
            NONE,
            str(cluster.get("preemptions", 0)),
            f"{cluster.get('completed', 0)} done",
        ]
    )
    return table(headers, rows)


def list_row(run: dict[str, Any]) -> list[str]:
    """A run's row in `fairway whatif list`."""
    if run["status"] == "failed":
        progress = shorten(run["error"], 60)
    elif run["status"] == "succeeded":
        progress = "done"
    else:
        progress = f"{run['progress'] * 100:.0f}% {shorten(run['progress_message'], 50)}"
    return [
        str(run["id"]),
        run["name"],
        run["source"],
        run["status"],
        age(run["created_at"]),
        progress,
    ]


def check_finished(run: dict[str, Any]) -> None:
    """A failed run is an error of the command (exit 1), with the run's own reason."""
    if run["status"] == "failed":
        raise CliError(f"what-if run {run['id']} failed: {run['error']}")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds // 60}m"
    return f"{seconds}s"
