"""The product and its services as real processes, for outage tests: `manage.py run` and
`bin/services` on a run directory and ports of a test's own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path

from scheduler_core.management.commands.run import free_port

ROOT = Path(__file__).resolve().parents[2]


def services(*args: str, run_dir: Path, **ports: int) -> dict[str, str]:
    """`bin/services ARGS` on `run_dir` (ports: pg=..., redis=... preferred); the URLs it
    exports."""
    env = {**os.environ, "FAIRWAY_SERVICES_DIR": str(run_dir)}
    env.update({f"FAIRWAY_{name.upper()}_PORT": str(port) for name, port in ports.items()})
    done = subprocess.run(
        [str(ROOT / "bin/services"), *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"bin/services {' '.join(args)}:\n{done.stderr}"
    return dict(re.findall(r"export (\w+)=(\S+)", done.stdout))


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Product:
    """`manage.py run` on a free port with `env` added to this process's environment
    (less the variables named in `unset`)."""

    def __init__(
        self,
        *args: str,
        env: dict[str, str],
        var_dir: Path,
        unset: tuple[str, ...] = (),
        sigint_ignored: bool = False,
    ) -> None:
        self.port = free_port()
        self.lines: list[str] = []
        inherited = {k: v for k, v in os.environ.items() if k not in unset}
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "run", "--port", str(self.port), *args],
            cwd=ROOT,
            env={**inherited, "FAIRWAY_VAR_DIR": str(var_dir), "PYTHONUNBUFFERED": "1", **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # as a script's background job (`cmd &`) starts it: with SIGINT ignored
            preexec_fn=_ignore_sigint if sigint_ignored else None,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_serving(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "Fairway is running" in self.output:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("the product did not start:\n" + self.output[-4000:])

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str = "",
        body: dict | None = None,
        authorization: str = "",
    ) -> tuple[int, Message, dict]:
        """(status, headers, JSON body) of one request (with a personal token, or another
        Authorization header); header names are looked up whatever their case, as HTTP has
        them (uvicorn sends them in lower case)."""
        authorization = f"Bearer {token}" if token else authorization
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}
            | ({"Authorization": authorization} if authorization else {}),
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, error.headers, json.loads(error.read() or b"{}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
