"""`fairway submit`: queue a workload with every option the API accepts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fairway_cli.client import ApiClient
from fairway_cli.documents import read_document
from fairway_cli.errors import OK, UsageError
from fairway_cli.output import print_json

HELP = "submit a workload to a project"
KINDS = ("training", "interactive", "inference", "cpu")
EPILOG = """\
The command to run goes after `--`. Options left out take the server's defaults (1 pod,
priority and preemptibility from --kind).

examples:
  fairway submit bert --project nlp --gpus 2 --image pytorch:2.3 -- python train.py --lr 3e-4
  fairway submit sweep-7 --project nlp --pods 8 --min-pods 4 --gpus 1 --pool a100 --pool h100
  fairway submit notebook --project vision --kind interactive --gpus 0.5 --no-preemptible
  fairway submit prep --project vision --kind cpu --cpu 8 --memory 32 --env STAGE=prep -- ./prep.sh
  fairway submit ddp --project nlp --groups-file groups.yaml -- torchrun train.py
  fairway submit nb --project vision --kind interactive --gpus 1 --port lab -- \
      'jupyter lab --ip=0.0.0.0 --port=$FAIRWAY_PORT_LAB --ServerApp.base_url=$FAIRWAY_PROXY_PREFIX'
"""


def key_value(text: str) -> tuple[str, str]:
    """`K=V` from the command line."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "submit",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="fairway submit NAME --project P [options] [-- COMMAND ARGS...]",
    )
    parser.add_argument("name", metavar="NAME", help="name, unique within the project")
    parser.add_argument("--project", "-p", required=True, help="project to submit to")
    parser.add_argument(
        "--pool",
        dest="pools",
        action="append",
        metavar="POOL",
        help="candidate pool, in order of preference; repeat for several (default: any)",
    )
    parser.add_argument("--kind", choices=KINDS, help="decides default priority/preemptibility")
    shape = parser.add_argument_group("pods (or --groups-file for a multi-group gang)")
    shape.add_argument("--gpus", type=float, help="GPUs per pod; below 1 shares a device")
    shape.add_argument("--cpu", type=float, help="CPU cores per pod")
    shape.add_argument("--memory", type=float, metavar="GIB", help="memory per pod, GiB")
    shape.add_argument("--pods", type=int, help="pods (default 1)")
    shape.add_argument(
        "--min-pods", type=int, help="pods that must start together (default: all of them)"
    )
    shape.add_argument(
        "--groups-file",
        type=Path,
        metavar="FILE",
        help="pod groups, JSON or YAML: a list of {name, pods, min_pods, gpus, cpu, memory} "
        "(or {groups: [...]})",
    )
    scheduling = parser.add_argument_group("scheduling")
    scheduling.add_argument("--priority", type=int, help="higher runs first")
    scheduling.add_argument(
        "--preemptible",
        action=argparse.BooleanOptionalAction,
        help="whether it may be evicted for others (default by kind)",
    )
    scheduling.add_argument(
        "--node-selector",
        action="append",
        type=key_value,
        metavar="KEY=VALUE",
        help="node label its pods' nodes must have; repeat for several",
    )
    scheduling.add_argument(
        "--weight", type=float, help="share among the project's equal-priority workloads"
    )
    scheduling.add_argument(
        "--backoff-limit", type=int, help="restarts after node faults before it fails"
    )
    runtime = parser.add_argument_group("runtime")
    runtime.add_argument("--image", help="container image")
    runtime.add_argument(
        "--env", action="append", type=key_value, metavar="KEY=VALUE", help="repeat for several"
    )
    runtime.add_argument(
        "--port",
        dest="ports",
        action="append",
        metavar="NAME",
        help="a port each pod serves over HTTP (its number in $FAIRWAY_PORT_<NAME>), opened "
        "through Fairway (`fairway describe` prints the URL); repeat for several",
    )
    runtime.add_argument(
        "--duration", type=float, metavar="SECONDS", help="seconds of work (simulated runs)"
    )
    runtime.add_argument(
        "--checkpoint-every", type=float, metavar="SECONDS", help="seconds between checkpoints"
    )
    parser.add_argument("--json", action="store_true", help="print the new workload as JSON")
    parser.set_defaults(handler=run, needs_client=True, takes_command=True)


# Options sent as they are, under the same names, when given.
FLAT = (
    "kind", "priority", "preemptible", "pods", "min_pods", "gpus", "cpu", "memory", "weight",
    "backoff_limit",
)  # fmt: skip
SPEC = ("image", "duration", "checkpoint_every")


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON body of POST /workloads/ for these arguments: only what the user gave."""
    body: dict[str, Any] = {"project": args.project, "name": args.name}
    if args.pools:
        body["pools"] = args.pools
    body.update({key: getattr(args, key) for key in FLAT if getattr(args, key) is not None})
    if args.node_selector:
        body["node_selector"] = dict(args.node_selector)
    if args.groups_file is not None:
        body["groups"] = read_groups(args.groups_file)
    spec: dict[str, Any] = {
        key: getattr(args, key) for key in SPEC if getattr(args, key) is not None
    }
    if args.env:
        spec["env"] = dict(args.env)
    if args.ports:
        spec["ports"] = [{"name": name, "protocol": "http"} for name in args.ports]
    if args.command:
        spec["command"] = args.command
    if spec:
        body["spec"] = spec
    return body


def read_groups(path: Path) -> Any:
    """The pod groups in a JSON or YAML file (the server checks their shape)."""
    data = read_document(path)
    if isinstance(data, dict) and "groups" in data:
        data = data["groups"]
    if not isinstance(data, list):
        raise UsageError(f"{path} must hold a list of pod groups (or {{groups: [...]}})")
    return data


def run(args: argparse.Namespace, client: ApiClient) -> int:
    workload = client.post("workloads/", request_body(args))
    if args.json:
        print_json(workload)
        return OK
    line = f"Submitted workload {workload['id']} ({workload['project']}/{workload['name']}): "
    line += workload["status"]
    if workload.get("pending_reason"):
        line += f" - {workload['pending_reason']}"
    print(line)
    return OK
