"""`fairway-agent`: register this node with a Fairway server and run the pods it places here.

Exit codes: 0 stopped by a signal; 1 the server refused this node (registration or
credential); 2 bad arguments or configuration; 3 the server speaks another protocol
version.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from pathlib import Path
from types import ModuleType

from fairway_agent import __version__
from fairway_agent.client import AgentClient, ClientConfig, CredentialRejected, VersionRejected
from fairway_agent.discovery import Inventory, discover, load_nvml
from fairway_agent.identity import IdentityError, RunAs, resolve_run_as
from fairway_agent.registration import (
    Credential,
    RegistrationError,
    load_credential,
    register,
    save_credential,
    websocket_url,
)
from fairway_agent.runs import RunManager
from fairway_agent.usage import GpuSampler

log = logging.getLogger("fairway_agent")

EXIT_REFUSED = 1
EXIT_CONFIG = 2
EXIT_VERSION = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairway-agent",
        description="Run the pods a Fairway server places on this node.",
    )
    parser.add_argument(
        "--server", required=True, help="the server's URL, e.g. https://fairway.example.org"
    )
    parser.add_argument(
        "--join-token",
        default=os.environ.get("FAIRWAY_JOIN_TOKEN"),
        help="a pool's join token (or env FAIRWAY_JOIN_TOKEN); needed only to register",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path("~/.fairway-agent").expanduser(),
        help="where the node credential, runs and their logs are kept (default ~/.fairway-agent)",
    )
    parser.add_argument(
        "--name", default=socket.gethostname(), help="node name (default: hostname)"
    )
    parser.add_argument("--address", help="address other pods reach this node at (default: name)")
    parser.add_argument("--fake-gpus", type=int, metavar="N", help="pretend to have N GPUs")
    parser.add_argument("--run-as", metavar="USER", help="the user pods run as (agent as root)")
    parser.add_argument(
        "--allow-root", action="store_true", help="let pods run as root (not recommended)"
    )
    parser.add_argument(
        "--checkpoint-root",
        type=Path,
        help="where checkpoint directories live (default <state dir>/checkpoints)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"fairway-agent {__version__}")
    return parser


def _fail(code: int, message: str) -> int:
    print(f"fairway-agent: {message}", file=sys.stderr)
    return code


class _Stop(Exception):
    """The agent cannot go on: exit with `code` after saying why."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        run_as = _prepare(args)
        inventory = discover(node_name=args.name, fake=args.fake_gpus)
        log.info(
            "%s: %d GPU(s) (%s), %d CPUs, %s GiB; pods run as %s",
            args.name,
            len(inventory.devices),
            inventory.source,
            inventory.cpu,
            inventory.memory_gib,
            run_as.name,
        )
        credential = _credential(args, inventory)
        return _serve(args, credential, inventory, run_as)
    except _Stop as stop:
        return _fail(stop.code, str(stop))


def _prepare(args: argparse.Namespace) -> RunAs:
    """Check the flags and the state directory; the user pods run as."""
    if not args.server.startswith(("http://", "https://")):
        raise _Stop(EXIT_CONFIG, f"--server must be an http:// or https:// URL, not {args.server}")
    if args.fake_gpus is not None and args.fake_gpus < 0:
        raise _Stop(EXIT_CONFIG, "--fake-gpus must be 0 or more")
    try:
        run_as = resolve_run_as(args.run_as, allow_root=args.allow_root)
        args.state_dir.mkdir(parents=True, exist_ok=True, mode=0o711)
    except IdentityError as exc:
        raise _Stop(EXIT_CONFIG, str(exc)) from None
    except OSError as exc:
        raise _Stop(EXIT_CONFIG, f"cannot use state directory {args.state_dir}: {exc}") from None
    return run_as


def _credential(args: argparse.Namespace, inventory: Inventory) -> Credential:
    """The node's credential: kept from an earlier registration, or registered now with
    the join token."""
    credential = load_credential(args.state_dir, args.server)
    if credential is not None:
        return credential
    if not args.join_token:
        raise _Stop(
            EXIT_CONFIG,
            f"this node is not registered with {args.server}: pass --join-token "
            "(or set FAIRWAY_JOIN_TOKEN)",
        )
    try:
        credential = register(
            server=args.server,
            join_token=args.join_token,
            hostname=args.name,
            address=args.address,
            inventory=inventory,
            agent_version=__version__,
        )
    except RegistrationError as exc:
        raise _Stop(EXIT_REFUSED, str(exc)) from None
    path = save_credential(args.state_dir, credential)
    log.info(
        "registered as %s in pool %s (credential in %s)", credential.node, credential.pool, path
    )
    return credential


def _serve(
    args: argparse.Namespace, credential: Credential, inventory: Inventory, run_as: RunAs
) -> int:
    """Run pods for the server until stopped (0) or refused."""
    nvml: ModuleType | None = load_nvml() if inventory.source == "nvml" else None
    runs = RunManager(
        args.state_dir,
        node_name=credential.node,
        run_as=run_as,
        devices=inventory.devices,
        checkpoint_root=args.checkpoint_root,
    )
    client = AgentClient(
        ClientConfig(
            url=websocket_url(args.server),
            node_token=credential.node_token,
            node=credential.node,
            address=args.address or args.name,
            inventory=inventory,
        ),
        runs,
        GpuSampler(inventory.devices, nvml),
    )
    try:
        asyncio.run(client.run_forever())
    except CredentialRejected as exc:
        raise _Stop(
            EXIT_REFUSED,
            f"{exc}. Delete {args.state_dir / 'node_token.json'} and register again with a "
            "new --join-token",
        ) from None
    except VersionRejected as exc:
        raise _Stop(EXIT_VERSION, str(exc)) from None
    except KeyboardInterrupt:
        log.info("stopped; runs keep running and are adopted again at the next start")
    finally:
        runs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
