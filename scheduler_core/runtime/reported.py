"""A backend whose runs end only when their executor reports it (through
services.runtime: workload_complete, workload_fail), never on a clock of Fairway's."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

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
        spec: dict[str, Any] | None,
        progress: float,
        started_at: datetime,
        gpus: float,
    ) -> RunEnd | None:
        return None

    def progress_kept(
        self,
        *,
        spec: dict[str, Any] | None,
        progress: float,
        started_at: datetime | None,
        stopped_at: datetime,
    ) -> float:
        return progress_kept(
            spec=spec, progress=progress, started_at=started_at, stopped_at=stopped_at
        )
