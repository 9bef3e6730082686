"""One execution backend for the loop, each run served by the executor of its pool's
backend (`NodePool.backend`, runtime.registry): executors that know when runs end (the
simulator) predict them; the others start and stop runs through the reconcile after
each cycle, and their workloads are `starting` until every pod runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from scheduler_core.choices import WorkloadStatus
from scheduler_core.engine.transitions import spec_seconds
from scheduler_core.models import NodePool
from scheduler_core.runtime import registry
from scheduler_core.runtime.executor import Capability, Executor, PredictsRunEnds, has
from scheduler_core.runtime.interface import EndedRun, EndedRuns, PlacedRun, RunEnd
from scheduler_core.runtime.reconcile import reconcile


class PoolRoutedBackend:
    """Routes each run to the executor of its pool. Which backend a pool has comes from
    the cycle's snapshot (`pool_backends`), else is read once from the database."""

    name = "routed"

    def __init__(self, pool_backends: Mapping[int, str] | None = None) -> None:
        self._pools = dict(pool_backends) if pool_backends else None

    def _pool_backends(self) -> dict[int, str]:
        if self._pools is None:
            self._pools = dict(NodePool.objects.values_list("pk", "backend"))
        return self._pools

    def _executor(self, pool_id: int | None) -> Executor | None:
        backend = self._pool_backends().get(pool_id) if pool_id is not None else None
        return registry.executor_for(backend) if backend is not None else None

    def _predictor(self, pool_id: int | None) -> PredictsRunEnds | None:
        """The executor of the pool, if it knows when its runs end."""
        executor = self._executor(pool_id)
        if executor is None or not has(executor, Capability.KNOWS_RUN_ENDS):
            return None
        return executor  # type: ignore[return-value]  # (the capability says it is one)

    def take_ended_runs(self, runs: Sequence[PlacedRun], now: datetime) -> EndedRuns:
        found = EndedRuns()
        for run in runs:
            predictor = self._predictor(run.pool_id)
            if predictor is None or run.status != WorkloadStatus.RUNNING:
                continue  # its executor reports when it ends
            if run.started_at is None:
                continue
            end = predictor.run_end(spec=run.spec, progress=run.progress, started_at=run.started_at)
            if end is None:
                continue
            if end <= now:
                progress = spec_seconds(run.spec, "duration")
                found.ended.append(EndedRun(run.workload_id, run.started_at, end, progress))
            else:
                found.going.append(RunEnd(run.workload_id, end, run.gpus))
        return found

    def placed_status(self, *, pool_id: int | None) -> str:
        executor = self._executor(pool_id)
        if executor is None or has(executor, Capability.KNOWS_RUN_ENDS):
            return WorkloadStatus.RUNNING  # its run starts with the placement
        return WorkloadStatus.STARTING  # running once its executor says every pod runs

    def run_started(
        self,
        *,
        workload_id: int,
        pool_id: int | None = None,
        spec: Mapping[str, Any] | None,
        progress: float,
        started_at: datetime,
        gpus: float,
    ) -> RunEnd | None:
        predictor = self._predictor(pool_id)
        if predictor is None:
            return None
        end = predictor.run_end(spec=spec, progress=progress, started_at=started_at)
        return None if end is None else RunEnd(workload_id, end, gpus)

    def after_commit(self) -> None:
        """Start and stop the runs of executors that run processes, on this cycle's
        pools."""
        backends = set(self._pool_backends().values()) & registry.backends_without(
            Capability.KNOWS_RUN_ENDS
        )
        if backends:
            reconcile(backends=backends)
