"""The execution interface: what the scheduling loop and the apply step know of whatever
runs the pods they place (executors behind a registry, runtime.registry; routed pool by
pool, runtime.routing).

The loop and the apply step only state facts ("this run started", "this run was stopped")
and ask the backend which runs ended; they never look at how a backend decides that. A
backend that starts runs elsewhere (node agents, Slurm) says that a placed workload is
only `starting` until its executor reports it running, and does its own work (starts,
stops) once the cycle's decisions are committed (`after_commit`).

Value types of its own only: the callers (the loop, the adapters) translate their
snapshot into `PlacedRun`s and take the ended ones out of it themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class RunEnd:
    """A run that is known to end at `at` and then frees `gpus` GPUs."""

    workload_id: int
    at: datetime
    gpus: float


@dataclass(frozen=True, slots=True)
class PlacedRun:
    """A placed workload's current run, as a cycle's snapshot has it."""

    workload_id: int
    pool_id: int | None
    status: str
    started_at: datetime | None
    progress: float
    spec: Mapping[str, Any]
    gpus: float


@dataclass(frozen=True, slots=True)
class EndedRun:
    """A run that ended at `finished_at` before a cycle began; `started_at` names the run
    (a workload restarted since is not completed), `progress` the seconds of work it
    reached (None: keep what the workload says)."""

    workload_id: int
    started_at: datetime | None
    finished_at: datetime
    progress: float | None


@dataclass
class EndedRuns:
    """What a backend says of a snapshot's runs: those that ended by its time (to be taken
    out of the snapshot and completed by the cycle), and the ends it knows of those still
    going."""

    ended: list[EndedRun] = field(default_factory=list)
    going: list[RunEnd] = field(default_factory=list)


class ExecutionBackend(Protocol):
    """Runs the pods the scheduler places and reports when they end."""

    name: str

    def take_ended_runs(self, runs: Sequence[PlacedRun], now: datetime) -> EndedRuns:
        """Of `runs`, those that ended by `now` and the known ends of those going (the
        runs given are not changed)."""
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
        spec: Mapping[str, Any] | None,
        progress: float,
        started_at: datetime,
        gpus: float,
    ) -> RunEnd | None:
        """A run starts; its end when the backend knows it in advance."""
        ...

    def after_commit(self) -> None:
        """The cycle's decisions are committed: act on them (start placed pods, stop those
        that lost their place). Called by the loop after each cycle; nothing to do for a
        backend whose runs are only bookkeeping."""
        ...
