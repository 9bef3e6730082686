"""The simulated runtime (settings.SIMULATED_RUNTIME, the default): a running workload
whose spec has `duration` completes that many seconds of progress after it (re)starts. An
evicted or moved workload starts over, or from its last checkpoint when its spec says
`checkpoint_every: N` (progress is kept in Workload.progress_seconds).

A cycle asks the backend first which runs ended by the time of its snapshot: those are
taken out of the snapshot, so the engine sees their GPUs free, and the same cycle's apply
step completes them in its one transaction. This needs no query of its own: the snapshot
holds every running workload's start, progress and spec. Runs that end while no cycle
runs are completed by the runtime tick (`complete_due`).
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from scheduler_core.choices import Backend, WorkloadStatus
from scheduler_core.models import Workload
from scheduler_core.runtime.interface import EndedRun, EndedRuns, RunEnd
from scheduler_core.services.runtime import Completion, workloads_complete

if TYPE_CHECKING:
    from scheduler_core.adapters.snapshot import LiveSnapshot, WorkloadRow


def spec_seconds(spec: dict[str, Any] | None, key: str) -> float | None:
    """A positive number of seconds from a workload spec (None when absent or invalid)."""
    value = (spec or {}).get(key)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def due_at(
    *, spec: dict[str, Any] | None, progress: float, started_at: datetime
) -> datetime | None:
    """When a run that started at `started_at` with `progress` seconds done completes."""
    duration = spec_seconds(spec, "duration")
    if duration is None:
        return None
    return started_at + timedelta(seconds=max(duration - progress, 0.0))


def progress_kept(
    *,
    spec: dict[str, Any] | None,
    progress: float,
    started_at: datetime | None,
    stopped_at: datetime,
) -> float:
    """Progress a workload keeps when its run stops early: its last checkpoint, else 0."""
    every = spec_seconds(spec, "checkpoint_every")
    if every is None or started_at is None:
        return 0.0
    done = progress + max((stopped_at - started_at).total_seconds(), 0.0)
    duration = spec_seconds(spec, "duration")
    if duration is not None:
        done = min(done, duration)
    return max(progress, math.floor(done / every + 1e-9) * every)


def simulated_runs() -> list[Completion]:
    """Every running workload with a simulated duration, and when its run ends (one query);
    workloads on agent pools end when their agents say so, whatever their spec."""
    rows = (
        Workload.objects.filter(
            status=WorkloadStatus.RUNNING, started_at__isnull=False, spec__has_key="duration"
        )
        .exclude(allocations__node__pool__backend=Backend.AGENT)
        .values_list("pk", "started_at", "progress_seconds", "spec")
    )
    runs = []
    for pk, started_at, progress, spec in rows:
        assert started_at is not None  # (filtered)
        finish = due_at(spec=spec, progress=progress, started_at=started_at)
        if finish is not None:
            runs.append(Completion(pk, started_at, finish))
    return runs


def complete_runs_due(*, now: datetime, request: bool = True) -> tuple[int, list[Completion]]:
    """Complete every running workload whose simulated duration is up at `now`; returns how
    many did and the runs still going (one read of the running workloads)."""
    if not settings.SIMULATED_RUNTIME:
        return 0, []
    runs = simulated_runs()
    due = [run for run in runs if run.finished_at <= now]
    done = workloads_complete(completions=due, request=request) if due else []
    return len(done), [run for run in runs if run.finished_at > now]


def complete_due(*, now: datetime | None = None, request: bool = True) -> int:
    """Complete every running workload whose simulated duration is up; how many did."""
    return complete_runs_due(now=now or timezone.now(), request=request)[0]


class SimulatedBackend:
    """Runs end after their spec's `duration`, counted from their last (re)start.

    `pools`: the pool ids whose runs it serves (None: every pool); a workload placed
    elsewhere is left to the backend serving that pool."""

    name = "simulated"

    def __init__(self, pools: frozenset[int] | None = None) -> None:
        self.pools = pools

    def _serves(self, live: LiveSnapshot, row: WorkloadRow) -> bool:
        if self.pools is None or not row.allocations:
            return True
        return live.node_pools.get(row.allocations[0].node_id) in self.pools

    def take_ended_runs(self, live: LiveSnapshot, now: datetime) -> EndedRuns:
        """Split the snapshot's simulated runs at `now`; the ended ones leave `live` (its
        engine snapshot and its rows) and are returned with their rows, to be completed."""
        runs = EndedRuns()
        for row in live.workloads.values():
            if row.status != WorkloadStatus.RUNNING or row.started_at is None:
                continue
            if not self._serves(live, row):
                continue
            end = due_at(spec=row.spec, progress=row.progress_seconds, started_at=row.started_at)
            if end is None:
                continue
            if end <= now:
                completion = Completion(row.pk, row.started_at, end)
                runs.ended.append(EndedRun(completion, row, spec_seconds(row.spec, "duration")))
            else:
                gpus = sum(len(a.gpu_devices) * a.gpu_fraction for a in row.allocations)
                runs.going.append(RunEnd(row.pk, end, gpus))
        if runs.ended:
            gone = {str(run.completion.workload_id) for run in runs.ended}
            live.snapshot = dataclasses.replace(
                live.snapshot,
                workloads=tuple(w for w in live.snapshot.workloads if w.id not in gone),
            )
            for run in runs.ended:
                del live.workloads[run.completion.workload_id]
        return runs

    def run_started(
        self,
        *,
        workload_id: int,
        pool_id: int | None = None,
        spec: dict[str, Any] | None,
        progress: float,
        started_at: datetime,
        gpus: float,
    ) -> RunEnd | None:
        end = due_at(spec=spec, progress=progress, started_at=started_at)
        return None if end is None else RunEnd(workload_id, end, gpus)

    def placed_status(self, *, pool_id: int | None) -> str:
        return WorkloadStatus.RUNNING  # its run starts with the placement

    def after_commit(self) -> None:
        pass

    # a stopped run keeps its last checkpoint (the spec's `checkpoint_every`), whoever ran it
    progress_kept = staticmethod(progress_kept)
