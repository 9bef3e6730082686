"""Simulated runs in a cycle's snapshot: those that ended by the time it was taken are
taken out of it, so the engine sees their GPUs free, and the same cycle's apply step
completes them (scheduler_core.adapters.apply), in its one transaction. This needs no
query of its own: the snapshot holds every running workload's start, progress and spec.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime

from scheduler_core.adapters.snapshot import LiveSnapshot, WorkloadRow
from scheduler_core.choices import WorkloadStatus
from scheduler_core.loop_timing import RunEnd
from scheduler_core.runtime import due_at
from scheduler_core.services.runtime import Completion


@dataclass
class SimulatedRuns:
    """The runs of a snapshot with a simulated duration: ended by its time, or going."""

    ended: list[tuple[Completion, WorkloadRow]] = field(default_factory=list)
    going: list[RunEnd] = field(default_factory=list)


def take_ended_runs(live: LiveSnapshot, now: datetime) -> SimulatedRuns:
    """Split the snapshot's simulated runs at `now`; the ended ones leave `live` (its
    engine snapshot and its rows) and are returned with their rows, to be completed."""
    runs = SimulatedRuns()
    for row in live.workloads.values():
        if row.status != WorkloadStatus.RUNNING or row.started_at is None:
            continue
        end = due_at(spec=row.spec, progress=row.progress_seconds, started_at=row.started_at)
        if end is None:
            continue
        if end <= now:
            runs.ended.append((Completion(row.pk, row.started_at, end), row))
        else:
            gpus = sum(len(a.gpu_devices) * a.gpu_fraction for a in row.allocations)
            runs.going.append(RunEnd(row.pk, end, gpus))
    if runs.ended:
        gone = {str(run.workload_id) for run, _ in runs.ended}
        live.snapshot = dataclasses.replace(
            live.snapshot,
            workloads=tuple(w for w in live.snapshot.workloads if w.id not in gone),
        )
        for run, _ in runs.ended:
            del live.workloads[run.workload_id]
    return runs
