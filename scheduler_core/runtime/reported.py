"""A backend whose runs end only when their executor reports it (through
services.runtime: workload_complete, workload_fail), never on a clock of Fairway's."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from scheduler_core.choices import WorkloadStatus
from scheduler_core.runtime.interface import EndedRuns, RunEnd
from scheduler_core.runtime.simulated import progress_kept

if TYPE_CHECKING:
    from scheduler_core.adapters.snapshot import LiveSnapshot


class ReportedBackend:
    """Runs are reported, not predicted: no run is known to end in advance."""

    name = "reported"

    def take_ended_runs(self, live: LiveSnapshot, now: datetime) -> EndedRuns:
        return EndedRuns()

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
        return None

    def placed_status(self, *, pool_id: int | None) -> str:
        return WorkloadStatus.RUNNING  # its run starts with the placement

    def after_commit(self) -> None:
        pass

    # a stopped run keeps its last checkpoint (the spec's `checkpoint_every`), whoever ran it
    progress_kept = staticmethod(progress_kept)
