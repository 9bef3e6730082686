"""The execution interface: what the scheduling loop and the apply step know of whatever
runs the pods they place (a simulator today; a node agent or Slurm behind the same seam).

The loop and the apply step only state facts ("this run started", "this run was stopped")
and ask the backend which runs ended; they never look at how a backend decides that. A
backend that starts runs elsewhere (node agents; Slurm later) says that a placed workload
is only `starting` until its executor reports it running, and does its own work (starts,
stops) once the cycle's decisions are committed (`after_commit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scheduler_core.adapters.snapshot import LiveSnapshot, WorkloadRow
    from scheduler_core.services.runtime import Completion


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run that is known to end at `at` and then frees `gpus` GPUs."""

    workload_id: int
    at: datetime
    gpus: float


@dataclass(frozen=True, slots=True)
class EndedRun:
    """A run that ended before a cycle began, with the progress its workload reached
    (None: keep what the workload says)."""

    completion: Completion
    row: WorkloadRow
    progress: float | None


@dataclass
class EndedRuns:
    """What a backend says of a snapshot's runs: those that ended by its time (taken out
    of it, to be completed by the cycle), and the ends it knows of those still going."""

    ended: list[EndedRun] = field(default_factory=list)
    going: list[RunEnd] = field(default_factory=list)


class ExecutionBackend(Protocol):
    """Runs the pods the scheduler places and reports when they end."""

    name: str

    def take_ended_runs(self, live: LiveSnapshot, now: datetime) -> EndedRuns:
        """The runs of `live` that ended by `now` (removed from it) and those going."""
        ...

    def placed_status(self, *, pool_id: int | None) -> str:
        """The status a workload takes when the scheduler places it in pool `pool_id`:
        `running` where the backend runs it at once (the simulator), `starting` where its
        executor reports when its processes run (WorkloadStatus values)."""
        ...

    def run_started(
        self,
        *,
        workload_id: int,
        pool_id: int | None,
        spec: dict[str, Any] | None,
        progress: float,
        started_at: datetime,
        gpus: float,
    ) -> RunEnd | None:
        """A run starts; its end when the backend knows it in advance."""
        ...

    def progress_kept(
        self,
        *,
        spec: dict[str, Any] | None,
        progress: float,
        started_at: datetime | None,
        stopped_at: datetime,
    ) -> float:
        """Seconds of progress a workload keeps when its run is stopped early."""
        ...

    def after_commit(self) -> None:
        """The cycle's decisions are committed: act on them (start placed pods, stop those
        that lost their place). Called by the loop after each cycle; nothing to do for a
        backend whose runs are only bookkeeping."""
        ...
