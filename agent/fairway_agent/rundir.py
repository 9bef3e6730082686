"""The files of one run, shared by the agent (runs.py) and the shim (shim.py).

```
runs/<run>/            owned by the agent's user
  spec.json            what to run: argv, env, cwd, user, lease file, fence_after, grace
  meta.json            the agent's record: run id, epoch, shim pid and create time
  started.json         written by the shim once the command runs (its pid)
  exit.json            written by the shim when the command ends:
                       {"exit_code", "signal", "start_failed", "reason", "fenced"}
  signal.json          a stop request: {"reason", "grace_period", "at"}
  stop                 the stop file (FAIRWAY_STOP_FILE): a pod may poll it to checkpoint
  output.log           stdout and stderr of the pod, appended
  shim.log             the shim's own messages
  work/                FAIRWAY_RUN_DIR: owned by the user the pod runs as
```
The pod's user can write only `work/`, so it can never make the agent or the shim (which
may be root) write through a link it planted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class RunDir:
    """Paths of one run's directory."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    spec = property(lambda self: self.path / "spec.json")
    meta = property(lambda self: self.path / "meta.json")
    started = property(lambda self: self.path / "started.json")
    exit = property(lambda self: self.path / "exit.json")
    signal = property(lambda self: self.path / "signal.json")
    stop = property(lambda self: self.path / "stop")
    output = property(lambda self: self.path / "output.log")
    shim_log = property(lambda self: self.path / "shim.log")
    work = property(lambda self: self.path / "work")

    def log_size(self) -> int:
        try:
            return self.output.stat().st_size
        except FileNotFoundError:
            return 0


def write_json(
    path: Path, data: dict[str, Any], *, mode: int = 0o644, durable: bool = False
) -> None:
    """Write atomically: readers see the old file or the whole new one. Only a `durable`
    write waits for the disk (fsync): the files of a run are of no use after a power loss
    (its processes are gone with it), the epoch is (runs.RunManager._save_epoch)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
