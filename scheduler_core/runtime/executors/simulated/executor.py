"""The simulator as an executor: runs end after their spec's `duration` (runs.py), on
Fairway's clock, and nothing is started or stopped anywhere. It declares
Capability.KNOWS_RUN_ENDS: a placed workload runs at once, the loop predicts its end
(`run_end`), and `observe` completes the runs that ended while no cycle ran and keeps its
nodes' heartbeats (heartbeats.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings

from scheduler_core.choices import Backend
from scheduler_core.runtime.executor import Capability, Launch, LiveRun, Observation, Stop
from scheduler_core.runtime.executors.simulated.heartbeats import (
    mark_silent_nodes_down,
    refresh_heartbeats,
)
from scheduler_core.runtime.executors.simulated.runs import complete_due, due_at


class SimulatedExecutor:
    """Runs end after their spec's `duration`, counted from their last (re)start."""

    backend = Backend.SIMULATED
    capabilities = frozenset({Capability.KNOWS_RUN_ENDS, Capability.SHARES_GPUS})

    def run_end(
        self, *, spec: Mapping[str, Any] | None, progress: float, started_at: datetime
    ) -> datetime | None:
        if not settings.SIMULATED_RUNTIME:
            return None  # reported runs: they end when a runtime says so
        return due_at(spec=spec, progress=progress, started_at=started_at)

    def start(self, launches: Sequence[Launch]) -> None:
        pass  # a simulated run starts with its placement

    def stop(self, stops: Sequence[Stop]) -> None:
        pass  # and stops with its eviction

    def observe(self, runs: Sequence[LiveRun], now: datetime) -> Observation:
        seen = Observation()
        if settings.SIMULATED_NODES:
            refresh_heartbeats(self.backend, now)
        seen.nodes_down = [n.name for n in mark_silent_nodes_down(self.backend, now)]
        seen.completed = complete_due(backend=self.backend, now=now)
        return seen
