"""Registration with a join token (`POST /api/v1/agents/register/`) and the node credential
it returns, kept in the state directory with mode 0600."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairway_agent.discovery import Inventory
from fairway_agent.rundir import read_json

TOKEN_FILE = "node_token.json"


class RegistrationError(Exception):
    """The server refused to register this node, or could not be reached."""


@dataclass(frozen=True)
class Credential:
    server: str
    node: str
    pool: str
    node_token: str


def load_credential(state_dir: Path, server: str) -> Credential | None:
    """The stored credential for `server`, or None."""
    data = read_json(state_dir / TOKEN_FILE)
    if not data or data.get("server") != server:
        return None
    return Credential(server, data["node"], data.get("pool", ""), data["node_token"])


def save_credential(state_dir: Path, credential: Credential) -> Path:
    """Write the credential readable by this user only (0600, even over an older file)."""
    path = state_dir / TOKEN_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        json.dump(credential.__dict__, f)
    return path


def register(
    *,
    server: str,
    join_token: str,
    hostname: str,
    address: str | None,
    inventory: Inventory,
    agent_version: str,
    timeout: float = 30,
) -> Credential:
    """Register (or re-register) this node; raises RegistrationError with the server's
    own words when it says no."""
    body = {
        "join_token": join_token,
        "hostname": hostname,
        "address": address or hostname,
        "devices": inventory.devices,
        "cpu": inventory.cpu,
        "memory_gib": inventory.memory_gib,
        "agent_version": agent_version,
    }
    request = urllib.request.Request(
        f"{server.rstrip('/')}/api/v1/agents/register/",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise RegistrationError(
            f"registration refused ({exc.code}): {_detail(exc.read())}"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RegistrationError(f"cannot reach {server}: {reason}") from None
    except ValueError:
        raise RegistrationError(f"{server} answered registration with something not JSON") from None
    try:
        return Credential(server, answer["node"], answer.get("pool", ""), answer["node_token"])
    except KeyError as exc:
        raise RegistrationError(f"the registration answer lacks {exc}") from None


def _detail(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")[:200] or "no detail"
    if isinstance(data, dict) and "detail" in data:
        return str(data["detail"])
    return json.dumps(data)[:200]


def websocket_url(server: str) -> str:
    """`http(s)://host/...` -> `ws(s)://host/.../ws/agents/`."""
    base = server.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    return f"{base}/ws/agents/"
