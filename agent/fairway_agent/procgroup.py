"""Process groups: who is in a run's group, whether a recorded process is still the same
one, and signalling a group without hitting the caller."""

from __future__ import annotations

import contextlib
import os
import signal

import psutil  # type: ignore[import-untyped]


def group_members(pgid: int, *, exclude: int | None = None) -> list[psutil.Process]:
    """Live processes whose process group is `pgid` (zombies left out)."""
    members = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == exclude or os.getpgid(proc.pid) != pgid:
                continue
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except (ProcessLookupError, psutil.Error):
            continue
        members.append(proc)
    return members


def is_same_process(pid: int, create_time: float) -> bool:
    """True when `pid` is alive (not a zombie) and was created at `create_time`, so a
    recycled pid is never mistaken for the original."""
    try:
        proc = psutil.Process(pid)
        return (
            abs(proc.create_time() - create_time) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.Error:
        return False


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to the whole group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_group_except_self(pgid: int) -> int:
    """SIGKILL every member of the group but the calling process; how many were hit."""
    members = group_members(pgid, exclude=os.getpid())
    for proc in members:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    return len(members)
