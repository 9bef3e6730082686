"""`fairway describe`: one workload in full: why it waits, where its pods run, what
happened to it."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from fairway_cli import workloads
from fairway_cli.client import ApiClient
from fairway_cli.errors import OK
from fairway_cli.output import NONE, age, number, print_json, table, timestamp

HELP = "show a workload: status, pending reason, queue position, pods, events"
EPILOG = """\
examples:
  fairway describe 42
  fairway describe nlp/bert
  fairway describe bert --json
"""
EVENTS_SHOWN = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "describe",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("workload", metavar="WORKLOAD", help="id, PROJECT/NAME or unique name")
    parser.add_argument(
        "--events", type=int, default=EVENTS_SHOWN, metavar="N", help="recent events to show"
    )
    parser.add_argument(
        "--json", action="store_true", help="the workload as JSON, with its `events`"
    )
    parser.set_defaults(handler=run, needs_client=True)


def run(args: argparse.Namespace, client: ApiClient) -> int:
    workload = workloads.find(client, args.workload)
    events: list[dict[str, Any]] = []
    if args.events > 0:
        page = client.get(f"workloads/{workload['id']}/events/", {"limit": args.events})
        events = page.get("results", [])
    if args.json:
        print_json({**workload, "events": events})
    else:
        print(render(workload, events, server=client.url))
    return OK


def render(w: dict[str, Any], events: list[dict[str, Any]], server: str = "") -> str:
    """The human-readable description (`server`: the URL its open ports are under)."""
    fields = _fields(w)
    width = max(len(label) for label, _ in fields) + 2
    lines = [f"{label + ':' if label else '':<{width}}{value}" for label, value in fields]
    lines += ["", f"Running pods ({w.get('running_pods', 0)}/{w['pods']}):"]
    lines += _placements(w.get("placements") or [])
    lines += _open_ports(w, server)
    lines += ["", "Events (newest first):"]
    if events:
        rows = [[age(e.get("at")), e["type"], e.get("reason") or ""] for e in events]
        lines.append(_indent(table(("AGE", "TYPE", "REASON"), rows)))
    else:
        lines.append("  none")
    return "\n".join(lines)


def _fields(w: dict[str, Any]) -> list[tuple[str, str]]:
    """The labelled lines at the top: who, what, where it waits, what it asks for."""
    fields: list[tuple[str, str]] = [
        ("Name", f"{w['project']}/{w['name']}"),
        ("ID", str(w["id"])),
        ("Department", w.get("department") or NONE),
        ("Kind", w["kind"]),
        ("Status", w["status"]),
    ]
    if w.get("pending_reason"):
        fields.append(("Pending reason", w["pending_reason"]))
    if w.get("queue_position") is not None:
        fields.append(("Queue position", f"{w['queue_position']} in {w['project']}"))
    fields += [
        (
            "Priority",
            f"{w['priority']} ({'preemptible' if w['preemptible'] else 'not preemptible'})",
        ),
        ("Pods", _pods(w)),
        ("GPUs", f"{number(w.get('total_gpus'))} with every pod placed"),
        ("Pools", workloads.pools_label(w)),
    ]
    if w.get("node_selector"):
        fields.append(
            ("Node selector", ", ".join(f"{k}={v}" for k, v in w["node_selector"].items()))
        )
    if w.get("weight", 1) != 1:
        fields.append(("Weight", number(w["weight"])))
    limit = w.get("backoff_limit")
    fields.append(
        (
            "Restarts",
            f"{w.get('restarts', 0)} ({'no limit' if limit is None else f'limit {limit}'})",
        )
    )
    fields.append(("Preemptions", str(w.get("preemptions", 0))))
    fields += _spec(w.get("spec") or {})
    fields += [
        ("Submitted", f"{timestamp(w.get('submitted_at'))} by {w.get('submitted_by') or NONE}"),
        ("Started", timestamp(w.get("started_at"))),
        ("Finished", timestamp(w.get("finished_at"))),
    ]
    return fields


def _placements(placements: list[dict[str, Any]]) -> list[str]:
    """The running pods' table (pod, node, devices, share), or "none"."""
    if not placements:
        return ["  none"]
    rows = [
        [
            f"{p['group']}-{p['pod_index']}",
            p["node"],
            ",".join(str(d) for d in p.get("gpu_devices") or []) or NONE,
            number(p.get("gpu_fraction")),
        ]
        for p in placements
    ]
    return [_indent(table(("POD", "NODE", "GPU DEVICES", "GPU SHARE"), rows))]


def _open_ports(w: dict[str, Any], server: str) -> list[str]:
    """Where to open its running pods' ports (in a browser signed in to the console)."""
    declared = [p.get("name") for p in (w.get("spec") or {}).get("ports") or []]
    if not declared:
        return []
    lines = ["", "Open (in a browser signed in to Fairway):"]
    ports = w.get("ports") or []
    if not ports:
        lines.append(f"  none yet: ports {', '.join(map(str, declared))} open once its pods run")
        return lines
    rows = [[p["pod"], p["name"], server.rstrip("/") + p["path"]] for p in ports]
    lines.append(_indent(table(("POD", "PORT", "URL"), rows)))
    return lines


def _pods(w: dict[str, Any]) -> str:
    groups = w.get("groups") or []
    if not groups:
        return f"{w['pods']} (min {w['min_pods']}), each {_asks(w)}"
    parts = [f"{g['name']}: {g['pods']} (min {g['min_pods']}), each {_asks(g)}" for g in groups]
    return "; ".join(parts)


def _asks(shape: dict[str, Any]) -> str:
    return (
        f"{number(shape.get('gpus'))} GPU, {number(shape.get('cpu'))} CPU, "
        f"{number(shape.get('memory'))} GiB"
    )


def _spec(spec: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if spec.get("image"):
        out.append(("Image", str(spec["image"])))
    command = spec.get("command")
    if command:
        out.append(("Command", command if isinstance(command, str) else shlex.join(command)))
    for key, value in (spec.get("env") or {}).items():
        out.append(("Env" if not any(k == "Env" for k, _ in out) else "", f"{key}={value}"))
    if spec.get("duration") is not None:
        out.append(("Duration", f"{number(spec['duration'])}s"))
    if spec.get("checkpoint_every") is not None:
        out.append(("Checkpoint every", f"{number(spec['checkpoint_every'])}s"))
    return out


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
