"""`fairway login` signs in like `det login` and `runai login`: username and password (the
CLI creates its own token through the API), on a terminal or from a script; pasting a
token stays possible (tests/cli/test_commands.py). Real CLI processes, a live server."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios

from scheduler_core.models import ApiToken
from tests.cli.conftest import CLI_DIR, run_cli

PASSWORD = "pw-12345678"  # tests.factories.user's


def test_login_with_a_password_creates_and_stores_a_token_of_its_own(
    live_server, cluster, config_file
):
    login = run_cli(
        "login", "--url", live_server.url, "--username", "alice",
        config=config_file, url=None, token=None, stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert login.returncode == 0, login.stderr
    assert "as alice" in login.stdout
    stored = json.loads(config_file.read_text())
    assert stored["url"] == live_server.url and stored["token"].startswith("fw_")
    assert PASSWORD not in config_file.read_text()  # only the token is kept
    (token,) = ApiToken.objects.filter(user=cluster["researcher"])
    assert token.name.startswith("fairway CLI on ")
    listing = run_cli("list", config=config_file, url=None, token=None)
    assert listing.returncode == 0, listing.stderr


def test_a_wrong_password_is_refused_and_nothing_is_stored(live_server, cluster, config_file):
    login = run_cli(
        "login", "--url", live_server.url, "--username", "alice",
        config=config_file, url=None, token=None, stdin="not-her-password\n",
    )  # fmt: skip
    assert login.returncode == 1
    assert "invalid username/password" in login.stderr.lower()
    assert len(login.stderr.strip().splitlines()) == 1
    assert not config_file.exists()
    assert not ApiToken.objects.exists()


def test_on_a_terminal_login_asks_for_username_and_password(live_server, cluster, config_file):
    """What a person sees: two prompts, the password not echoed."""
    main, terminal = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAIRWAY_", "DJANGO_"))}
    env |= {"PYTHONPATH": str(CLI_DIR), "FAIRWAY_CONFIG": str(config_file)}

    def own_terminal() -> None:  # the pty becomes the process's terminal, as in a shell
        os.setsid()
        fcntl.ioctl(terminal, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        [sys.executable, "-m", "fairway_cli", "login", "--url", live_server.url],
        stdin=terminal, stdout=terminal, stderr=terminal, env=env,
        cwd=config_file.parent.parent, preexec_fn=own_terminal, close_fds=True,
    )  # fmt: skip
    os.close(terminal)
    seen = _read_until(main, "Username: ")
    os.write(main, b"alice\n")
    seen += _read_until(main, "Password for alice: ")
    os.write(main, PASSWORD.encode() + b"\n")
    seen += _read_until(main, "saved to")
    assert process.wait(30) == 0, seen
    os.close(main)
    assert "as alice" in seen and PASSWORD not in seen
    assert json.loads(config_file.read_text())["token"].startswith("fw_")


def _read_until(fd: int, text: str, timeout: float = 30.0) -> str:
    """What the terminal shows until `text` appears."""
    seen = ""
    while text not in seen:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"waited for {text!r}, saw {seen!r}"
        seen += os.read(fd, 4096).decode(errors="replace")
    return seen
