"""One execution backend per pool: each workload is served by the backend its pool names
(`NodePool.backend`): the simulator (or, with SIMULATED_RUNTIME off, reported runs) for
simulated pools, node agents for agent pools (docs/agent.md, "Who runs what")."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings

from scheduler_core.choices import Backend
from scheduler_core.models import NodePool
from scheduler_core.runtime.agent.backend import AgentBackend
from scheduler_core.runtime.interface import EndedRuns, ExecutionBackend, RunEnd
from scheduler_core.runtime.reported import ReportedBackend
from scheduler_core.runtime.simulated import SimulatedBackend, progress_kept

if TYPE_CHECKING:
    from scheduler_core.adapters.snapshot import LiveSnapshot


class PoolRoutedBackend:
    """Routes each run to the backend of its pool. Which backend a pool has is read from
    the cycle's snapshot (`take_ended_runs`, the first call of a cycle), else once from
    the database."""

    name = "routed"

    def __init__(self, pool_backends: dict[int, str] | None = None) -> None:
        self._pools = pool_backends
        self._simulated_backend: ExecutionBackend | None = None  # made once per pool map
        self.agent = AgentBackend()

    def _pool_backends(self) -> dict[int, str]:
        if self._pools is None:
            self._pools = dict(NodePool.objects.values_list("pk", "backend"))
        return self._pools

    def _simulated(self) -> ExecutionBackend:
        """The backend of the simulated pools (asked once per placement: made once)."""
        if self._simulated_backend is None:
            self._simulated_backend = self._make_simulated()
        return self._simulated_backend

    def _make_simulated(self) -> ExecutionBackend:
        if not settings.SIMULATED_RUNTIME:
            return ReportedBackend()
        pools = self._pool_backends()
        if Backend.AGENT not in pools.values():
            return SimulatedBackend()
        return SimulatedBackend(
            pools=frozenset(pk for pk, kind in pools.items() if kind != Backend.AGENT)
        )

    def _for(self, pool_id: int | None) -> ExecutionBackend:
        if pool_id is not None and self._pool_backends().get(pool_id) == Backend.AGENT:
            return self.agent
        return self._simulated()

    def take_ended_runs(self, live: LiveSnapshot, now: datetime) -> EndedRuns:
        if live.pool_backends:
            self._pools = dict(live.pool_backends)
            self._simulated_backend = None
        # agent runs end when their agents report it (runtime.agent.reports), never here
        return self._simulated().take_ended_runs(live, now)

    def placed_status(self, *, pool_id: int | None) -> str:
        return self._for(pool_id).placed_status(pool_id=pool_id)

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
        return self._for(pool_id).run_started(
            workload_id=workload_id, pool_id=pool_id, spec=spec, progress=progress,
            started_at=started_at, gpus=gpus,
        )  # fmt: skip

    def after_commit(self) -> None:
        if Backend.AGENT in self._pool_backends().values():
            self.agent.after_commit()

    # a stopped run keeps its last checkpoint (the spec's `checkpoint_every`), whoever ran it
    progress_kept = staticmethod(progress_kept)
