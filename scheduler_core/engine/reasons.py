"""Pending reasons in words a researcher understands, naming numbers."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from scheduler_core.engine.resources import EPSILON, format_amount

if TYPE_CHECKING:
    from scheduler_core.engine.session import Session, Vec
    from scheduler_core.engine.state import WorkloadState

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


def fairshare_blocked(
    session: Session, w: WorkloadState, queue: str, level: str, pool: str, extra: Vec
) -> str:
    """Why a queue over its fairshare waits: figures of the resource that is over."""
    index = session.pools[pool]
    cache_key = ("fairshare", queue, level, extra[0], extra[1], extra[2])
    text = index.cached_reason(cache_key)
    if text is None:
        text = index.keep_reason(cache_key, _fairshare_blocked(session, queue, level, pool, extra))
    return text


def _fairshare_blocked(session: Session, queue: str, level: str, pool: str, extra: Vec) -> str:
    key = (queue, pool)
    acc = session.acc.get(key, [0.0, 0.0, 0.0])
    fair = session.fair.get(key, [0.0, 0.0, 0.0])
    free = session.pools[pool].free_gpus
    for i in range(3):
        if extra[i] > EPSILON and acc[i] + extra[i] > fair[i] + EPSILON:
            share = fair[i]
            text = "its fair share" if math.isfinite(share) else "its share"
            return (
                f"{level} {queue} would exceed {text} of {format_amount(share)} "
                f"{RESOURCE_WORDS[i]} in pool {pool} (holds {format_amount(acc[i])}, this "
                f"needs {format_amount(extra[i])}), so it can only use idle resources "
                f"({format_amount(free)} free GPUs) and cannot reclaim"
            )
    return f"{level} {queue} is over its fair share in pool {pool}"


def priority_blocked(blocker: WorkloadState, pool: str) -> str:
    """Why a lower-priority workload waits under the priority policy."""
    return (
        f"waiting behind higher-priority workload {blocker.name} (priority "
        f"{blocker.priority}) in pool {pool}"
    )
