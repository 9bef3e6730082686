"""Helpers for the agent tests: a run manager over a temporary state directory, pod
commands as small Python programs, and waiting with a deadline."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

from fairway_agent.discovery import fake_gpus
from fairway_agent.identity import resolve_run_as
from fairway_agent.runs import RunManager, RunStatus

from benchmarks.agent_stack import wait_for as stack_wait_for

DEADLINE = 10.0
# poll often: these waits are for local files and processes (the end-to-end tests' wait)
wait_for = partial(stack_wait_for, timeout=DEADLINE, interval=0.05)


MANAGERS: list[RunManager] = []  # so a failing test leaves no pod behind (conftest.py)


def manager(state_dir: Path, *, gpus: int = 4, **kwargs: Any) -> RunManager:
    runs = RunManager(
        state_dir,
        node_name="n1",
        run_as=resolve_run_as(None, allow_root=True),  # whoever runs the tests
        devices=fake_gpus(gpus, "n1"),
        **kwargs,
    )
    MANAGERS.append(runs)
    return runs


def pod(code: str) -> list[str]:
    """argv running a Python program (the tests' interpreter)."""
    return [sys.executable, "-c", code]


def start_msg(run: int, epoch: int, argv: list[str] | None, **extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "run": run,
        "epoch": epoch,
        "workload": {"id": 1, "name": "train", "project": "vision"},
        "argv": argv,
        "shell": None,
        "image": None,
        "env": {"FAIRWAY_WORKLOAD": "train"},
        "gpus": [0],
        "gpu_fraction": 1,
        "workdir": None,
        "grace_period": 5,
        "checkpoint_key": f"train-{run}",
    }
    msg.update(extra)
    return msg


def wait_until_ended(runs: RunManager, run: int, timeout: float = DEADLINE) -> RunStatus:
    def ended() -> RunStatus | None:
        runs.poll()
        status = runs.runs[str(run)].status
        return status if status.terminal else None

    return wait_for(ended, timeout=timeout, what=f"run {run} to end")


def run_dir(runs: RunManager, run: int) -> Path:
    return runs.runs[str(run)].dir.path


# A pod that says it is ready in its run dir, then waits for a `go` file there.
WAIT_FOR_GO = """
import os, pathlib, time
d = pathlib.Path(os.environ["FAIRWAY_RUN_DIR"])
(d / "ready").touch()
while not (d / "go").exists():
    time.sleep(0.05)
"""
