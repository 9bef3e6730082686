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


def no_over_quota_share(
    level: str,
    queue: str,
    pool: str,
    resource: int,
    fair: float,
    held: float,
    needs: float,
    free_gpus: float,
) -> str:
    """Why a workload of a queue with over-quota weight 0 cannot reclaim: it gets no
    share of the over-quota resources, so its fair share is at most its deserved quota
    (`resource` indexes RESOURCE_WORDS)."""
    words = RESOURCE_WORDS[resource]
    return (
        f"{level} {queue} has over-quota weight 0, so it has no over-quota share: its fair "
        f"share in pool {pool} is {format_amount(fair)} {words}, no more than its deserved "
        f"quota (holds {format_amount(held)}, this needs {format_amount(needs)}); it can only "
        f"use idle resources ({format_amount(free_gpus)} free GPUs) and cannot reclaim"
    )


def not_growing(w: WorkloadState, why: str) -> str:
    """Why a running elastic workload does not get its next pod."""
    return f"running {len(w.pods)} of {_wanted(w)} pods; its next pod waits: {why}"


def shrunk_this_cycle(w: WorkloadState) -> str:
    """Why a running elastic workload that gave up pods this cycle does not grow."""
    cause = f" ({w.evict_reason})" if w.evict_reason else ""
    return (
        f"running {len(w.pods)} of {_wanted(w)} pods; it gave up pods this cycle{cause} "
        f"and grows again once they are not needed"
    )


def _wanted(w: WorkloadState) -> int:
    return sum(g.pods for g in w.groups)
