"""Pending reasons in words a researcher understands, naming numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from scheduler_core.engine.resources import format_amount

if TYPE_CHECKING:
    from scheduler_core.engine.framework.state import WorkloadState

_EPOCH_THRESHOLD = 1e8  # below: simulated seconds from 0; above: epoch seconds
RESOURCE_WORDS = ("GPUs", "CPU cores", "GiB of memory")


def format_time(t: float, now: float | None = None) -> str:
    """'t=600' for simulated time; for epoch seconds a UTC clock time, '14:05 UTC', with
    the date in front when it is not the day of `now`."""
    if t < _EPOCH_THRESHOLD:
        return f"t={format_amount(t)}"
    when = datetime.fromtimestamp(t, tz=UTC)
    today = datetime.fromtimestamp(now, tz=UTC).date() if now is not None else None
    clock = when.strftime("%H:%M UTC")
    return clock if when.date() == today else f"{when:%Y-%m-%d} {clock}"


def priority_blocked(blocker: WorkloadState, pool: str) -> str:
    """Why a lower-priority workload waits under the priority policy."""
    return (
        f"waiting behind higher-priority workload {blocker.name} (priority "
        f"{blocker.priority}) in pool {pool}"
    )
