"""The agent backend: runs are real processes started by node agents. A placed workload
is `starting` until every pod runs; runs end only when agents report it
(runtime.agent.reports); after each cycle commits, `reconcile` starts and stops pods."""

from __future__ import annotations

from scheduler_core.choices import WorkloadStatus
from scheduler_core.runtime.agent.reconcile import reconcile
from scheduler_core.runtime.reported import ReportedBackend


class AgentBackend(ReportedBackend):
    """Pods run on node agents: reported runs (nothing is known to end in advance) whose
    workloads start only when every pod's agent says so."""

    name = "agent"

    def placed_status(self, *, pool_id: int | None) -> str:
        return WorkloadStatus.STARTING  # running once every pod's agent says so

    def after_commit(self) -> None:
        reconcile()
