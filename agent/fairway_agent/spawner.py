"""A fork server for shims: one per agent, started once, with the shim already imported,
so starting a run costs a fork instead of a Python interpreter start (about 0.1-0.3 s, and
seconds on a loaded node, on every run's critical path).

The agent writes a run directory per line to the server's stdin; the server forks, and
answers `PID CREATE_TIME` on its stdout once it has read the child's create time (the
child waits for that, so even a command that ends at once is recorded by pid and create
time, as `procgroup.is_same_process` needs). The child becomes the leader of a new session,
its stdout and stderr appended to the run's `shim.log`, every other inherited descriptor
closed, and runs `shim.main` exactly as `python -m fairway_agent.shim RUN_DIR` would.

Children are reaped by the kernel (SIGCHLD ignored here, restored in the child). When the
agent goes away the server reads end-of-file and exits; its shims are adopted by init and
keep running (they outlive the agent, as always).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import IO

import psutil  # type: ignore[import-untyped]

import fairway_agent
from fairway_agent import shim
from fairway_agent.rundir import RunDir


class SpawnError(OSError):
    """The fork server could not start a shim."""


class ShimSpawner:
    """The agent's handle on its fork server (started on first use, again if it died)."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._proc: subprocess.Popen[str] | None = None

    def spawn(self, run_dir: RunDir) -> tuple[int, float]:
        """Start the shim of `run_dir`; its pid and create time."""
        for attempt in (1, 2):
            proc = self._server()
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(f"{run_dir.path}\n")
                proc.stdin.flush()
                return _parse_answer(proc.stdout.readline())
            except (OSError, ValueError) as exc:
                self.close()
                if attempt == 2:
                    raise SpawnError(f"the shim fork server failed: {exc}") from None
        raise AssertionError("unreachable")

    def _server(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            env = {k: v for k, v in os.environ.items() if k != "FAIRWAY_JOIN_TOKEN"}
            root = str(Path(fairway_agent.__file__).resolve().parent.parent)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
            self._proc = subprocess.Popen(
                [self.python, "-m", "fairway_agent.spawner"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                env=env, close_fds=True,
            )  # fmt: skip
        return self._proc

    def close(self) -> None:
        """Stop the fork server (its shims keep running)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _parse_answer(line: str) -> tuple[int, float]:
    if not line:
        raise ValueError("it exited")
    if line.startswith("error "):
        raise ValueError(line[6:].strip())
    pid, create_time = line.split()
    return int(pid), float(create_time)


# ---- the server side ---------------------------------------------------------------------


def _child(run_dir: str, go: int) -> None:
    """In the forked child: wait for the parent, become a shim of `run_dir`, never return."""
    code = 1
    try:
        # As in a fresh interpreter: the shim waits for its command (SIGCHLD), and an
        # ignored SIGINT would be inherited by the pod's command through exec.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        os.read(go, 1)
        out = os.open(Path(run_dir) / "shim.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, min(os.sysconf("SC_OPEN_MAX"), 65536))
        os.chdir(run_dir)
        code = shim.main([run_dir])
    except BaseException:  # a forked child must never return into the server
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _fork_one(run_dir: str, out: IO[str]) -> None:
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        _child(run_dir, go_read)
    os.close(go_read)
    try:
        create_time = psutil.Process(pid).create_time()
        out.write(f"{pid} {create_time}\n")
    except psutil.Error as exc:
        out.write(f"error {exc}\n")
    finally:
        os.write(go_write, b"g")
        os.close(go_write)
        out.flush()


def serve(lines: IO[str], out: IO[str]) -> None:
    """Fork a shim for each run directory read from `lines` until end-of-file."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps finished shims
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the agent's ^C is not ours
    for line in iter(lines.readline, ""):
        run_dir = line.strip()
        if not run_dir:
            continue
        try:
            _fork_one(run_dir, out)
        except OSError as exc:
            out.write(f"error {exc}\n")
            out.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
