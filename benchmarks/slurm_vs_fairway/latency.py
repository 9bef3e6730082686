"""How long a job takes to start, split where Slurm's part begins: from Fairway's
`scontrol release` to the allocation (Slurm's scheduling pass), and from the allocation
to the job's first line (Slurm's launch: slurmctld's agent sends the batch launch to
slurmd, which starts the script). Allocations come from slurmctld's log (the benchmark's
cluster logs at `SlurmctldDebug=info`, local time to the millisecond), so both sides are
measured by the same ruler."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path

from benchmarks.slurm_vs_fairway.stamps import read_stamps

# the main scheduler's and the backfill's line for a job given its nodes
ALLOCATED = re.compile(
    r"^\[(\d{4}-\d\d-\d\dT[\d:.]+)\] "
    r"(?:sched: Allocate|sched/backfill: _start_job: Started) JobId=(\d+)"
)
EARLY = 0.05  # seconds a clock may be ahead of another (same host)


def allocations(log: Path, since: float) -> dict[int, list[float]]:
    """Epoch seconds of each allocation slurmctld logged from `since` on, by job id (a
    requeued job is allocated again under its id; ids of an earlier run are older)."""
    found: dict[int, list[float]] = defaultdict(list)
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        match = ALLOCATED.match(line)
        if match is None:
            continue
        at = datetime.fromisoformat(match.group(1)).timestamp()
        if at >= since:
            found[int(match.group(2))].append(at)
    return found


def starts(stamp: Path) -> list[float]:
    """When the job's process started, each time (its `s` stamps)."""
    return [at for kind, at in read_stamps(stamp) if kind == "s"]


def first_after(times: Iterable[float], at: float) -> float | None:
    """Seconds from `at` to the first of `times` not before it, if any."""
    later = [t for t in times if t >= at - EARLY]
    return min(later) - at if later else None


def p50_p95(gaps: list[float]) -> str:
    if not gaps:
        return "-"
    gaps = sorted(gaps)
    p95 = gaps[min(len(gaps) - 1, int(0.95 * len(gaps)))]
    return f"{statistics.median(gaps):.2f} s (p95 {p95:.2f} s, n={len(gaps)})"


def launch_latency(allocated: Mapping[int, list[float]], began: Mapping[int, list[float]]) -> str:
    """Allocation -> the job's process, over every allocation of the jobs in `began`
    (job id -> its process's start times)."""
    gaps = []
    for job_id, times in began.items():
        for at in allocated.get(job_id, []):
            gap = first_after(times, at)
            if gap is not None:
                gaps.append(gap)
    return p50_p95(gaps)


def release_split(
    released: list[tuple[int, float]],
    allocated: Mapping[int, list[float]],
    began: Mapping[int, list[float]],
) -> str:
    """Release -> process, and its two parts: release -> allocation (Slurm's scheduling
    pass) and allocation -> process (Slurm's launch)."""
    whole, scheduled, launched = [], [], []
    for job_id, at in released:
        process = first_after(began.get(job_id, []), at)
        if process is None:
            continue
        whole.append(process)
        allocation = first_after(allocated.get(job_id, []), at)
        if allocation is not None:
            scheduled.append(allocation)
            launched.append(process - allocation)
    return (
        f"release to process start p50 {p50_p95(whole)}: release to allocation "
        f"{p50_p95(scheduled)}, allocation to process {p50_p95(launched)}"
    )
