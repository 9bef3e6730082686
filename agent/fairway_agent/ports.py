"""Ports of a pod (docs/interactive.md): the node gives each port a `start` message names a
free port on this machine, tells the pod in its environment (FAIRWAY_PORT_<NAME>, the list
in FAIRWAY_PORTS, the first also in FAIRWAY_PORT) and reports them in the run's `running`
state, so the server's proxy reaches the pod there."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Collection
from typing import Any

from fairway_agent import protocol

_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,13}[a-z0-9])?$")
TRIES = 32  # free ports asked of the system before giving up on one port


class PortError(ValueError):
    """A start message whose ports cannot be given (bad names, no free port)."""


def names(value: Any) -> list[str]:
    """The port names of a start message's `ports` (a list of names), checked."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > protocol.MAX_PORTS:
        raise PortError(f"ports must be a list of at most {protocol.MAX_PORTS} names")
    if len(set(map(str, value))) != len(value):
        raise PortError("a port name is listed twice")
    for name in value:
        if not isinstance(name, str) or not _NAME.match(name):
            raise PortError(f"bad port name: {name!r}")
    return list(value)


def _free_port(taken: Collection[int], held: list[socket.socket]) -> int:
    for _ in range(TRIES):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("", 0))  # the system's choice among ports nothing listens on
        port = int(sock.getsockname()[1])
        held.append(sock)  # kept open until every port is chosen: no port twice
        if port not in taken:
            return port
    raise PortError(f"no free port found in {TRIES} tries")


def pick(wanted: list[str], taken: Collection[int]) -> dict[str, int]:
    """A free port for each name, none of them in `taken` (ports of this node's other
    live runs, which may not listen yet)."""
    held: list[socket.socket] = []
    try:
        return {name: _free_port(taken, held) for name in wanted}
    except OSError as exc:
        raise PortError(f"could not find a free port: {exc}") from None
    finally:
        for sock in held:
            with contextlib.suppress(OSError):
                sock.close()


def environment(ports: dict[str, int]) -> dict[str, str]:
    """What the pod is told of its ports."""
    if not ports:
        return {}
    env = {protocol.port_variable(name): str(port) for name, port in ports.items()}
    env["FAIRWAY_PORTS"] = ",".join(f"{name}={port}" for name, port in ports.items())
    env["FAIRWAY_PORT"] = str(next(iter(ports.values())))
    return env
