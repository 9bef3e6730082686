"""`python -m fairway_agent.shim RUN_DIR`: runs one pod's command and outlives the agent.

The agent starts the shim as the leader of a new session (so its pid is the run's process
group id). The shim:
- starts the command from `spec.json` in its own process group, stdout and stderr appended
  to `output.log`, as the pod's user when `spec.json` names one (the shim may be root);
- ignores SIGTERM itself (the group gets it: the command decides what to do with it), so it
  is still there to write `exit.json` when the command ends;
- kills the group after the grace period of a stop request (`signal.json`);
- fences: when the agent's lease file is older than `fence_after` seconds (the agent lost
  the server), it stops the command itself: SIGTERM, the stop file, SIGKILL after grace;
- writes `exit.json` (`exit_code`, `signal`, or `start_failed` with a reason a user
  understands) and exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from fairway_agent.procgroup import kill_group_except_self, signal_group
from fairway_agent.rundir import RunDir, read_json, write_json
from fairway_agent.wake import poke

log = logging.getLogger("fairway_agent.shim")
POLL_SECONDS = 0.2


def _note_sigterm(signum: int, frame: FrameType | None) -> None:
    # A Python handler, not SIG_IGN: handlers are reset by exec, so the command still
    # receives SIGTERM with its default action.
    log.info("SIGTERM received; the command decides, the shim waits for it")


def lease_is_stale(spec: dict[str, Any], now: float) -> bool:
    """True when the agent's lease file is older than `fence_after` (or gone)."""
    lease_file, fence_after = spec.get("lease_file"), spec.get("fence_after")
    if not lease_file or fence_after is None:
        return False
    try:
        return now - os.stat(lease_file).st_mtime > float(fence_after)
    except FileNotFoundError:
        return True


def start_failure(spec: dict[str, Any], exc: OSError) -> str:
    """Why the command could not start, in words a user understands."""
    argv = spec["argv"]
    cwd = spec.get("cwd")
    if cwd and exc.filename == cwd:
        if isinstance(exc, FileNotFoundError):
            return f"working directory does not exist: {cwd}"
        if isinstance(exc, NotADirectoryError):
            return f"working directory is not a directory: {cwd}"
        return f"working directory is not accessible: {cwd}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {argv[0]}"
    if isinstance(exc, PermissionError | IsADirectoryError):
        return f"command is not executable: {argv[0]}"
    return f"could not start {argv[0]}: {exc.strerror or exc}"


def _user_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    user = spec.get("user")
    if not user or user["uid"] == os.geteuid():
        return {}
    return {"user": user["uid"], "group": user["gid"], "extra_groups": user["groups"]}


def _exit_record(returncode: int, *, fenced: bool) -> dict[str, Any]:
    if returncode < 0:
        try:
            name: str | None = signal.Signals(-returncode).name
        except ValueError:
            name = f"SIG{-returncode}"
        return {"exit_code": None, "signal": name, "fenced": fenced}
    return {"exit_code": returncode, "signal": None, "fenced": fenced}


def _run_kill_command(spec: dict[str, Any]) -> None:
    kill_argv = spec.get("kill_argv")
    if kill_argv:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(kill_argv, capture_output=True, timeout=30, check=False)


def supervise(run_dir: RunDir, spec: dict[str, Any]) -> dict[str, Any]:
    """Run the command to its end; the record for exit.json."""
    if run_dir.stop.exists():
        return {"exit_code": None, "signal": None, "reason": "stopped before it started"}
    log_fd = os.open(run_dir.output, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o640)
    try:
        proc = subprocess.Popen(
            spec["argv"],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            cwd=spec.get("cwd"),
            env=spec.get("env", {}),
            **_user_kwargs(spec),
        )
    except OSError as exc:
        reason = start_failure(spec, exc)
        os.write(log_fd, f"fairway: {reason}\n".encode())
        return {"exit_code": None, "signal": None, "start_failed": True, "reason": reason}
    finally:
        os.close(log_fd)
    write_json(run_dir.started, {"pid": proc.pid, "at": time.time()})
    poke(spec.get("wake_file"))
    pgid = os.getpgid(0)
    grace = float(spec.get("grace_period", 30))
    kill_at: float | None = None
    killed = fenced = False
    while True:
        try:
            returncode = proc.wait(timeout=POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.time()
        if kill_at is None:
            request = read_json(run_dir.signal)
            if request is not None:
                kill_at = float(request.get("at", now)) + float(request.get("grace_period", grace))
            elif lease_is_stale(spec, now):
                log.warning("the agent's lease is stale: stopping the command (fenced)")
                fenced = True
                run_dir.stop.touch()
                signal_group(pgid, signal.SIGTERM)
                kill_at = now + grace
        elif now >= kill_at and not killed:
            log.warning("grace period over: killing the process group")
            _run_kill_command(spec)
            kill_group_except_self(pgid)
            killed = True
    # Nothing the pod started may outlive it (its GPUs are handed to the next pod).
    kill_group_except_self(pgid)
    return _exit_record(returncode, fenced=fenced)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m fairway_agent.shim RUN_DIR", file=sys.stderr)
        return 2
    run_dir = RunDir(Path(args[0]))
    logging.basicConfig(
        filename=run_dir.shim_log,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    if os.getsid(0) != os.getpid():
        os.setsid()
    signal.signal(signal.SIGTERM, _note_sigterm)
    spec = read_json(run_dir.spec)
    if spec is None:
        record: dict[str, Any] = {
            "exit_code": None,
            "signal": None,
            "start_failed": True,
            "reason": "the run's spec.json is missing or unreadable",
        }
    else:
        try:
            record = supervise(run_dir, spec)
        except Exception as exc:  # the agent must always learn how the run ended
            log.exception("shim failed")
            record = {"exit_code": None, "signal": None, "start_failed": True, "reason": str(exc)}
    record.setdefault("start_failed", False)
    record.setdefault("reason", None)
    record["at"] = time.time()
    write_json(run_dir.exit, record)
    poke((spec or {}).get("wake_file"))
    log.info("command ended: %s", record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
