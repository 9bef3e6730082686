"""The busiest windows of a job trace: where to test a policy (a scheduler's figures on a
quiet day say little, and one busy day may be chance)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime, timedelta

from scheduler_core.whatif.traces import TraceJob

HOUR = 3600.0


def busiest_windows(
    jobs: Sequence[TraceJob], *, origin: datetime, hours: float, count: int
) -> list[tuple[datetime, float]]:
    """The `count` windows of `hours` with the most GPU-hours submitted (durations as the
    jobs give them, capped by the reader), as (start, GPU-hours), busiest first. Windows
    start on the hour (`jobs[i].submitted` counts seconds from `origin`, a whole hour),
    and no two start less than two windows apart: a window's jobs still run for up to a
    window after it closes, so replays of nearer windows would share their busiest hours."""
    ordered = sorted(jobs, key=lambda j: j.submitted)
    if not ordered or count < 1:
        return []
    times = [j.submitted for j in ordered]
    prefix = [0.0]
    for job in ordered:
        prefix.append(prefix[-1] + job.gpus * job.duration / HOUR)
    span = hours * HOUR
    first = int(times[0] // HOUR)
    last = int(times[-1] // HOUR)
    loads = []
    for hour in range(first, last + 1):
        a = bisect.bisect_left(times, hour * HOUR)
        b = bisect.bisect_left(times, hour * HOUR + span)
        loads.append((prefix[b] - prefix[a], hour))
    loads.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[tuple[float, int]] = []
    for load, hour in loads:
        if all(abs(hour - other) * HOUR >= 2 * span for _, other in chosen):
            chosen.append((load, hour))
            if len(chosen) == count:
                break
    return [(origin + timedelta(hours=hour), load) for load, hour in chosen]
