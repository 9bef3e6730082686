"""The runtime tick (beat runs it every few seconds): heartbeats, silent nodes (agent
nodes: unreachable, then down), simulated runs that ended while no cycle ran, agent
starts and stops still owed, and housekeeping of old history."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max
from django.utils import timezone

from scheduler_core.models import CycleRecord, IdempotencyKey, NodePool, UsageSample
from scheduler_core.runtime.agent.liveness import check_agent_nodes
from scheduler_core.runtime.agent.reconcile import reconcile
from scheduler_core.runtime.heartbeats import mark_silent_nodes_down, refresh_simulated_heartbeats
from scheduler_core.runtime.simulated import complete_due


def prune_history(now: datetime) -> None:
    """Drop cycle records and idempotency keys past their retention, and usage older than
    every pool's window."""
    CycleRecord.objects.filter(
        started_at__lt=now - timedelta(seconds=settings.CYCLE_RECORD_RETENTION)
    ).delete()
    longest = NodePool.objects.aggregate(w=Max("time_based_window"))["w"] or 0
    UsageSample.objects.filter(interval_end__lt=now - timedelta(seconds=longest)).delete()
    IdempotencyKey.objects.filter(
        created_at__lt=now - timedelta(seconds=settings.IDEMPOTENCY_KEY_RETENTION)
    ).delete()


def _prune_now() -> bool:
    """True at most once a minute across all workers."""
    return cache.add(f"{settings.SCHEDULER_KEY_PREFIX}:prune", 1, timeout=60)


@dataclass
class TickReport:
    """What one runtime tick did."""

    completed: int = 0
    nodes_down: list[str] = field(default_factory=list)
    nodes_unreachable: list[str] = field(default_factory=list)


def tick(now: datetime | None = None) -> TickReport:
    """One runtime tick: heartbeats, silent nodes, simulated completions, housekeeping.

    Completions and node failures go through services, which request a cycle.
    """
    now = now or timezone.now()
    report = TickReport()
    if settings.SIMULATED_NODES:
        refresh_simulated_heartbeats(now)
    report.nodes_down = [n.name for n in mark_silent_nodes_down(now)]
    agents = check_agent_nodes(now)
    report.nodes_down += agents.down
    report.nodes_unreachable = agents.unreachable
    reconcile()  # a safety net: starts and stops that a lost message or a crash left owed
    report.completed = complete_due(now=now)
    if _prune_now():
        prune_history(now)
    return report
