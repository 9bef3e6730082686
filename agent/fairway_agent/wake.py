"""How a shim wakes its agent at once (its command started or ended) instead of waiting
for the agent's next poll: a named pipe `<state dir>/wake` that the agent reads and each
shim writes a byte to (`poke`). A named pipe, not an inherited descriptor, because a shim
outlives its agent: the next agent opens the same path. Nothing is lost when no agent
reads: the agent polls its runs anyway (the pipe only makes it look sooner).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


class WakePipe:
    """The agent's end of the wake pipe (created if missing, mode 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISFIFO(os.lstat(self.path).st_mode):
                os.unlink(self.path)  # not ours to trust: make the pipe again
        with contextlib.suppress(FileExistsError):
            os.mkfifo(self.path, 0o600)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        # A writer of our own, so the read end never sees end-of-file between shims.
        self._keep = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)

    def drain(self) -> bool:
        """Read what the shims wrote; True when any did."""
        woken = False
        while True:
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                return woken
            if not data:
                return woken
            woken = True

    def close(self) -> None:
        for fd in (self.fd, self._keep):
            with contextlib.suppress(OSError):
                os.close(fd)


def poke(path: str | None) -> None:
    """Wake the agent reading `path`, if one does (never blocks, never fails)."""
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:  # no reader (ENXIO), no pipe: the agent's poll finds the change
        return
    try:
        with contextlib.suppress(BlockingIOError):  # full: the agent is waking anyway
            os.write(fd, b".")
    finally:
        os.close(fd)
