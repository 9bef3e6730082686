"""The agent backend: runs are real processes started by node agents. A placed workload
is `starting` until every pod runs; runs end only when agents report it
(runtime.agent.reports); after each cycle commits, `reconcile` starts and stops pods."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from scheduler_core.choices import WorkloadStatus
from scheduler_core.runtime.agent.reconcile import reconcile
from scheduler_core.runtime.interface import EndedRuns, RunEnd
from scheduler_core.runtime.simulated import progress_kept

if TYPE_CHECKING:
    from scheduler_core.adapters.snapshot import LiveSnapshot


class AgentBackend:
    """Pods run on node agents; nothing is known to end in advance."""

    name = "agent"

    def take_ended_runs(self, live: LiveSnapshot, now: datetime) -> EndedRuns:
        return EndedRuns()

    def placed_status(self, *, pool_id: int | None) -> str:
        return WorkloadStatus.STARTING  # running once every pod's agent says so

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

    def after_commit(self) -> None:
        reconcile()

    # a stopped run keeps its last checkpoint (the spec's `checkpoint_every`), whoever ran it
    progress_kept = staticmethod(progress_kept)
