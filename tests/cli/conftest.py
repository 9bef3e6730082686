"""The CLI as a user runs it: a real `python -m fairway_cli` process talking to a live
server (pytest-django's `live_server`, one for the session) with a real API token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler_core.services.tokens import token_create

CLI_DIR = Path(__file__).resolve().parents[2] / "cli"
RUN_TIMEOUT = 60

Fairway = Callable[..., subprocess.CompletedProcess[str]]


def run_cli(
    *args: str,
    url: str | None,
    token: str | None,
    config: Path,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `fairway ARGS...` in a fresh process with only what the user would set."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("FAIRWAY_", "DJANGO_")) and key != "PYTHONPATH"
    }
    env["PYTHONPATH"] = str(CLI_DIR)
    env["FAIRWAY_CONFIG"] = str(config)
    if url is not None:
        env["FAIRWAY_URL"] = url
    if token is not None:
        env["FAIRWAY_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "fairway_cli", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=env,
        cwd=next(p for p in config.parents if p.exists()),  # not the repository
        timeout=RUN_TIMEOUT,
    )


@pytest.fixture
def config_file(tmp_path) -> Path:
    return tmp_path / "fairway" / "config.json"


@pytest.fixture
def alice_token(cluster) -> str:
    """A token of `alice`, a researcher in project vision."""
    return token_create(user=cluster["researcher"], name="cli")[1]


@pytest.fixture
def fairway(live_server, alice_token, config_file) -> Fairway:
    """`fairway("list", "--json")`: the CLI as alice against the live server; pass
    url=/token= to change who or where."""

    def run(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
        kwargs.setdefault("url", live_server.url)
        kwargs.setdefault("token", alice_token)
        return run_cli(*args, config=config_file, **kwargs)

    return run


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
