"""The runs of a cycle's snapshot, for the execution interface: what is placed
(`placed_runs`), and the snapshot without the runs that ended before the cycle
(`without_ended`, a new snapshot: the one given is not changed)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from scheduler_core.adapters.snapshot import LiveSnapshot, WorkloadRow
from scheduler_core.choices import PLACED_STATES
from scheduler_core.runtime.interface import EndedRun, PlacedRun


def placed_runs(live: LiveSnapshot) -> list[PlacedRun]:
    """Every placed workload's current run in `live`."""
    return [
        PlacedRun(
            workload_id=row.pk,
            pool_id=live.node_pools.get(row.allocations[0].node_id) if row.allocations else None,
            status=row.status,
            started_at=row.started_at,
            progress=row.progress_seconds,
            spec=row.spec,
            gpus=sum(len(a.gpu_devices) * a.gpu_fraction for a in row.allocations),
        )
        for row in live.workloads.values()
        if row.status in PLACED_STATES
    ]


def without_ended(
    live: LiveSnapshot, ended: Sequence[EndedRun]
) -> tuple[LiveSnapshot, list[tuple[EndedRun, WorkloadRow]]]:
    """A copy of `live` without the workloads of the `ended` runs (the engine sees their
    GPUs free), and each ended run with its workload's row (to be completed)."""
    if not ended:
        return live, []
    rows = [(run, live.workloads[run.workload_id]) for run in ended]
    gone = {str(run.workload_id) for run in ended}
    snapshot = dataclasses.replace(
        live.snapshot, workloads=tuple(w for w in live.snapshot.workloads if w.id not in gone)
    )
    workloads = {pk: row for pk, row in live.workloads.items() if str(pk) not in gone}
    return dataclasses.replace(live, snapshot=snapshot, workloads=workloads), rows
