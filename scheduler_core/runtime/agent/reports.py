"""What connected agents report about their runs (docs/agent.md).

A minimal stand-in for the transport branch: the lifecycle branch's module of the same name,
with the same two functions, replaces it (the workload lifecycle and reconcile live there).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from scheduler_core.models import Node, PodRun, PodRunState
from scheduler_core.models.agents import LIVE_RUN_STATES


def agent_hello(*, node: Node, runs: list[dict[str, Any]]) -> list[int]:
    """An agent (re)connected, still having `runs`: the ids of the runs it should keep (the
    node's live runs that still serve an allocation)."""
    return list(
        PodRun.objects.filter(
            node=node, state__in=LIVE_RUN_STATES, allocation__isnull=False
        ).values_list("pk", flat=True)
    )


def run_reported(
    *,
    node: Node,
    run_id: int,
    epoch: int,
    state: str,
    exit_code: int | None,
    signal: str | None,
    reason: str | None,
    at: datetime,
) -> None:
    """A run of the node changed state (running, exited, start_failed)."""
    run = PodRun.objects.filter(pk=run_id, node=node, epoch=epoch).first()
    if run is None:
        return
    run.state = state
    run.exit_code = exit_code
    run.signal = signal or ""
    run.reason = reason or ""
    if state == PodRunState.RUNNING and run.started_at is None:
        run.started_at = at or timezone.now()
    if state in (PodRunState.EXITED, PodRunState.START_FAILED):
        run.ended_at = at or timezone.now()
    run.save()
