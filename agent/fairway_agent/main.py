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
from fairway_agent.discovery import discover, load_nvml
from fairway_agent.identity import IdentityError, resolve_run_as
from fairway_agent.registration import (
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.server.startswith(("http://", "https://")):
        return _fail(EXIT_CONFIG, f"--server must be an http:// or https:// URL, not {args.server}")
    if args.fake_gpus is not None and args.fake_gpus < 0:
        return _fail(EXIT_CONFIG, "--fake-gpus must be 0 or more")
    try:
        run_as = resolve_run_as(args.run_as, allow_root=args.allow_root)
        args.state_dir.mkdir(parents=True, exist_ok=True, mode=0o711)
    except IdentityError as exc:
        return _fail(EXIT_CONFIG, str(exc))
    except OSError as exc:
        return _fail(EXIT_CONFIG, f"cannot use state directory {args.state_dir}: {exc}")

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
    credential = load_credential(args.state_dir, args.server)
    if credential is None:
        if not args.join_token:
            return _fail(
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
            return _fail(EXIT_REFUSED, str(exc))
        path = save_credential(args.state_dir, credential)
        log.info(
            "registered as %s in pool %s (credential in %s)", credential.node, credential.pool, path
        )

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
        return _fail(
            EXIT_REFUSED,
            f"{exc}. Delete {args.state_dir / 'node_token.json'} and register again with a "
            "new --join-token",
        )
    except VersionRejected as exc:
        return _fail(EXIT_VERSION, str(exc))
    except KeyboardInterrupt:
        log.info("stopped; runs keep running and are adopted again at the next start")
    finally:
        runs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
