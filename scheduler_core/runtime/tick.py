"""The runtime tick (beat runs it every few seconds): each executor whose backend some pool
has observes its live runs and its nodes (the simulator: heartbeats and runs that ended
while no cycle ran; the agent: silent nodes unreachable, then down; Slurm: its jobs and
nodes, in bulk), what they report is applied (runtime.lifecycle), starts and stops still
owed go out (reconcile), and old history is pruned."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max
from django.utils import timezone

from scheduler_core.models import CycleRecord, IdempotencyKey, NodePool, PodRun, UsageSample
from scheduler_core.models.agents import LIVE_RUN_STATES
from scheduler_core.runtime import registry
from scheduler_core.runtime.executor import Executor, LiveRun
from scheduler_core.runtime.lifecycle import runs_observed
from scheduler_core.runtime.nodes import nodes_observed
from scheduler_core.runtime.reconcile import reconcile

logger = logging.getLogger(__name__)

OWED_AFTER = 2.0
"""Seconds after its placement that a pod's start counts as owed to the tick's reconcile
(before that, the reconcile after its cycle's commit sends it)."""


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
    failed: list[str] = field(default_factory=list)  # backends whose observe failed


def live_runs(backend: str) -> list[LiveRun]:
    """The live runs on the pools of `backend` (what its executor observes)."""
    rows = (
        PodRun.objects.filter(node__pool__backend=backend, state__in=LIVE_RUN_STATES)
        .order_by("pk")
        .values_list(
            "pk", "workload_id", "node_id", "node__name", "group", "pod_index", "epoch",
            "state", "external_id",
        )
    )  # fmt: skip
    return [LiveRun(*row) for row in rows]


def observe(executor: Executor, now: datetime, report: TickReport, mine: set[int]) -> None:
    """Let `executor` observe its runs and nodes, and apply what it saw (`mine`: the ids
    of its backend's pools)."""
    seen = executor.observe(live_runs(executor.backend), now)
    if seen.nodes is not None:
        for pool_id, nodes in seen.nodes.items():
            if pool_id in mine:  # an executor speaks only for its own pools
                nodes_observed(pool_id=pool_id, seen=nodes, now=now)
    if seen.runs:
        runs_observed(seen.runs)
    report.completed += seen.completed
    report.nodes_down += seen.nodes_down
    report.nodes_unreachable += seen.nodes_unreachable


def tick(now: datetime | None = None) -> TickReport:
    """One runtime tick: every executor observes, owed starts and stops go out,
    housekeeping. Completions and node failures go through services, which request a
    cycle."""
    now = now or timezone.now()
    report = TickReport()
    pools: dict[str, set[int]] = defaultdict(set)
    for backend, pool_id in NodePool.objects.values_list("backend", "pk"):
        pools[backend].add(pool_id)
    for executor in registry.executors():
        if executor.backend not in pools:
            continue  # no pool of its backend: no node and no run for it to observe
        try:
            observe(executor, now, report, pools[executor.backend])
        except Exception:  # one executor's outage (Slurm unreachable) stops no other's tick
            logger.exception("the %s executor failed to observe its runs", executor.backend)
            report.failed.append(executor.backend)
    # A safety net: starts and stops that a lost message or a crash left owed. Pods placed
    # within the last OWED_AFTER seconds are the cycle's to start: in a burst every node
    # has some, and reconciling all of them every second doubled the cycles' own work.
    reconcile(placed_before=now - timedelta(seconds=OWED_AFTER))
    if _prune_now():
        prune_history(now)
    return report
