"""Desired against actual state on the nodes of executors that start and stop runs
(docs/agent.md, "Desired and actual state: reconcile"; docs/executors.md).

Desired: the Allocation rows (what the engine decided). Actual: PodRuns, the neutral run
records every such executor shares. `reconcile()` runs after every cycle commit, on
every executor report and on an agent's connect, and each runtime tick as a safety net
(for starts owed since tick.OWED_AFTER seconds, and every stop owed):

1. an allocation that has never had a run gets one (its node's next epoch), handed to
   its executor's `start`, once none of its devices is held by a live run of another pod
   (or, for a fractional share, once it fits beside them); until then it waits: the
   engine may place a pod on a GPU whose previous process is still stopping, the
   executor is told to start it only once that process is gone. So no device ever has
   two processes. (An executor that assigns devices itself does its own waiting.)
2. a live run that lost its allocation (evicted, moved, shrunk, cancelled, a peer failed)
   and was not told to stop yet is handed to its executor's `stop` with the pool's
   grace period.

3. a start nothing was heard of for RUN_START_RESEND_AFTER seconds (its frame was lost)
   is sent again, with a new epoch, to an executor that allows it
   (Capability.RESENDS_STARTS); so is a start an agent's hello shows never arrived.

Each node is reconciled in its own transaction under its row lock, so the worker (after a
cycle) and the reports can call it at once; epochs are taken under that lock and never
reused. Lock order everywhere: the node's send lock, nodes, workloads, runs, allocations.
The executor is called after each node's commit with that node's starts (grouped by
workload) and stops, still under the node's send lock (a PostgreSQL advisory lock), so a
node gets its starts in the order of their epochs whoever sends them (an agent refuses a
start whose epoch is below one it has seen).
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.runtime import registry
from scheduler_core.runtime.executor import (
    Capability,
    Executor,
    Launch,
    PodLaunch,
    Stop,
    StopReason,
    has,
)
from scheduler_core.runtime.launch import Launches

logger = logging.getLogger(__name__)

FULL = 1.0 + 1e-9  # a device's share, with room for rounding
SEND_LOCK_CLASS = 0x46570001  # first key of the per-node send locks (pg_advisory_lock)


@dataclass
class ReconcileReport:
    """What one reconcile did: runs started (or started again), runs told to stop, and
    allocations still waiting for their devices to be released."""

    started: list[int] = field(default_factory=list)
    stopped: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)


@dataclass
class _Pass:
    """One executor's starts and stops of one reconcile, handed to it after commit."""

    executor: Executor
    pods: dict[int, list[PodLaunch]] = field(default_factory=lambda: defaultdict(list))
    specs: dict[int, Launches] = field(default_factory=dict)
    stops: list[Stop] = field(default_factory=list)

    def launches(self) -> list[Launch]:
        return [self.specs[pk].launch(pk, pods) for pk, pods in self.pods.items()]

    def hand_over(self) -> None:
        """Call the executor (after the current transaction commits, at once outside)."""
        launches, stops, executor = self.launches(), list(self.stops), self.executor
        if stops:
            transaction.on_commit(lambda: executor.stop(stops))
        if launches:
            transaction.on_commit(lambda: executor.start(launches))


# nodes by id: given, or a query of their ids (`values("node_id")`) run with the reconcile's
Nodes = Iterable[int] | QuerySet[Any, Any]


def reconcile(
    *,
    node_ids: Nodes | None = None,
    resend: Iterable[int] = (),
    backends: Iterable[str] | None = None,
    placed_before: datetime | None = None,
) -> ReconcileReport:
    """Start what is placed and not started, stop what runs and is no longer placed, on
    every node with work of every executor that runs processes (only `node_ids`, only
    the pools of `backends`, when given; only nodes with a start owed since before
    `placed_before` or a stop owed, when that is given); runs `resend` (starting, never
    reported: their executor lost their start) are handed to `start` again."""
    report = ReconcileReport()
    wanted = node_ids if node_ids is None or isinstance(node_ids, QuerySet) else set(node_ids)
    running = registry.backends_without(Capability.KNOWS_RUN_ENDS)
    if backends is not None:
        running &= set(backends)
    owed = _nodes_with_work(running, wanted, placed_before)
    for backend in sorted(running):
        executor = registry.executor_for(backend)
        again = set(resend)
        if wanted is None and has(executor, Capability.RESENDS_STARTS):
            again |= _unanswered_starts(backend, timezone.now())
        for node_id in sorted(owed[backend] | _nodes_of(backend, again)):
            work = _Pass(executor)
            with _send_lock(node_id):
                with transaction.atomic():
                    _reconcile_node(node_id, work, report, again)
                work.hand_over()
    return report


@contextlib.contextmanager
def _send_lock(node_id: int) -> Iterator[None]:
    """Hold the node's send lock (PostgreSQL; one process at a time elsewhere)."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [SEND_LOCK_CLASS, node_id])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [SEND_LOCK_CLASS, node_id])


def _unanswered_starts(backend: str, now: datetime) -> set[int]:
    """Runs still `starting`, and wanted, whose start went out RUN_START_RESEND_AFTER
    seconds ago or more with nothing heard since."""
    before = now - timedelta(seconds=settings.RUN_START_RESEND_AFTER)
    return set(
        PodRun.objects.filter(
            node__pool__backend=backend, state=PodRunState.STARTING, allocation__isnull=False,
            start_sent_at__lte=before,
        ).values_list("pk", flat=True)
    )  # fmt: skip


def _nodes_with_work(
    backends: Collection[str], wanted: Nodes | None, placed_before: datetime | None = None
) -> dict[str, set[int]]:
    """Per backend of `backends`, its nodes (among `wanted`) with a start owed (placed
    before `placed_before`, when given) or a stop owed: one query for them all (a report
    reconciles its nodes, and most of the time there is nothing to do)."""
    work: dict[str, set[int]] = defaultdict(set)
    if not backends:
        return work
    starts = Allocation.objects.filter(node__pool__backend__in=backends, runs__isnull=True)
    if placed_before is not None:
        starts = starts.filter(created_at__lt=placed_before)
    stops = PodRun.objects.filter(
        node__pool__backend__in=backends, state__in=LIVE_RUN_STATES, allocation__isnull=True,
        stop_sent_at__isnull=True,
    )  # fmt: skip
    if wanted is not None:
        starts = starts.filter(node_id__in=wanted)
        stops = stops.filter(node_id__in=wanted)
    columns = ("node_id", "node__pool__backend")
    rows = starts.order_by().values_list(*columns).union(stops.order_by().values_list(*columns))
    for node_id, backend in rows:
        work[backend].add(node_id)
    return work


def _nodes_of(backend: str, runs: set[int]) -> set[int]:
    if not runs:
        return set()
    return set(
        PodRun.objects.filter(pk__in=runs, node__pool__backend=backend).values_list(
            "node_id", flat=True
        )
    )


def lock_node(node_id: int, backend: str) -> tuple[Node, list[PodRun]] | None:
    """Node `node_id` of `backend`'s pools and its live runs, locked for this transaction
    (None: no such node). The locks keep the rows' keys shareable: an agent's usage
    samples and events that refer to the node or a run still commit meanwhile (with full
    locks they waited, and a reconcile waiting in turn for a run such a commit had
    locked was a deadlock)."""
    node = (
        Node.objects.select_for_update(of=("self",), no_key=True)
        .select_related("pool")
        .filter(pk=node_id, pool__backend=backend)
        .first()
    )
    if node is None:
        return None
    live = list(
        PodRun.objects.select_for_update(no_key=True)
        .filter(node=node, state__in=LIVE_RUN_STATES)
        .order_by("pk")
    )
    return node, live


def _reconcile_node(node_id: int, work: _Pass, report: ReconcileReport, resend: set[int]) -> None:
    locked = lock_node(node_id, work.executor.backend)
    if locked is None:
        return
    node, live = locked
    _stop_unwanted(node, live, work, report)
    if node.state == NodeState.DOWN:
        return  # its runs are lost; its allocations are gone or going
    allocations = list(
        Allocation.objects.select_for_update(no_key=True).filter(node=node).order_by("pk")
    )
    started = set(
        PodRun.objects.filter(allocation__in=allocations).values_list("allocation_id", flat=True)
    )
    fresh = [a for a in allocations if a.pk not in started]
    again = [r for r in live if r.pk in resend and r.state == PodRunState.STARTING]
    if not fresh and not again:
        return
    specs = Launches(
        [a.workload_id for a in fresh] + [r.workload_id for r in again], node.pool.grace_period
    )
    again = [r for r in again if r.allocation_id is not None and specs.wanted(r.workload_id)]
    epoch = node.last_epoch
    _new_epochs(node, again)
    new_runs = _new_runs(node, live, fresh, specs, work, report)
    if node.last_epoch != epoch:
        Node.objects.filter(pk=node.pk).update(last_epoch=node.last_epoch)
    for run in again + new_runs:
        if run.allocation_id is None or not specs.wanted(run.workload_id):
            continue
        work.pods[run.workload_id].append(specs.pod(run, node))
        work.specs.setdefault(run.workload_id, specs)
        report.started.append(run.pk)


def _new_epochs(node: Node, runs: list[PodRun]) -> None:
    """Starts sent again take new epochs: the node may have seen later ones since (and
    refuses a start below them), and a late copy of the first one stays refused."""
    now = timezone.now()
    for run in runs:
        node.last_epoch += 1
        run.epoch, run.start_sent_at = node.last_epoch, now
        run.save(update_fields=["epoch", "start_sent_at"])


def _new_runs(
    node: Node,
    live: list[PodRun],
    fresh: list[Allocation],
    specs: Launches,
    work: _Pass,
    report: ReconcileReport,
) -> list[PodRun]:
    """A run (the node's next epoch) for each fresh allocation whose devices are free."""
    waits = not has(work.executor, Capability.ASSIGNS_DEVICES)
    now = timezone.now()
    held: dict[int, float] = defaultdict(float)
    for run in live:
        for device in run.gpu_devices or ():
            held[device] += run.gpu_fraction
    new_runs = []
    for a in fresh:
        if not specs.wanted(a.workload_id):
            continue
        if waits and any(held[d] + a.gpu_fraction > FULL for d in a.gpu_devices or ()):
            report.waiting.append(a.pk)  # its GPU is still releasing
            continue
        for d in a.gpu_devices or ():
            held[d] += a.gpu_fraction
        node.last_epoch += 1
        new_runs.append(
            PodRun(
                workload_id=a.workload_id, allocation=a, node=node, group=a.group,
                pod_index=a.pod_index, epoch=node.last_epoch, gpu_devices=a.gpu_devices,
                gpu_fraction=a.gpu_fraction, state=PodRunState.STARTING, start_sent_at=now,
            )
        )  # fmt: skip
    if new_runs:
        PodRun.objects.bulk_create(new_runs)
        # (bulk_create sets primary keys on PostgreSQL and SQLite alike)
    return new_runs


def _stop_unwanted(node: Node, live: list[PodRun], work: _Pass, report: ReconcileReport) -> None:
    """Stop every live run of `node` that lost its allocation and was not told yet."""
    unwanted = [r for r in live if r.allocation_id is None and r.stop_sent_at is None]
    if not unwanted:
        return
    statuses = dict(
        Workload.objects.filter(pk__in={r.workload_id for r in unwanted}).values_list(
            "pk", "status"
        )
    )
    now = timezone.now()
    for run in unwanted:
        run.stop_reason = run.stop_reason or stop_reason(statuses.get(run.workload_id))
        run.stop_sent_at = now
        run.state = PodRunState.STOPPING
        run.save(update_fields=["stop_reason", "stop_sent_at", "state"])
        work.stops.append(
            Stop(
                run_id=run.pk, node_id=node.pk, external_id=run.external_id,
                reason=StopReason(run.stop_reason), grace_period=node.pool.grace_period,
            )
        )  # fmt: skip
        report.stopped.append(run.pk)


def stop_reason(status: str | None) -> str:
    """Why a run whose workload is now `status` is stopped: a workload that will run
    again (re-queued, moved, suspended) is preempted; one that will not is cancelled."""
    if status in (WorkloadStatus.CANCELLED, WorkloadStatus.FAILED, WorkloadStatus.COMPLETED):
        return StopReason.CANCEL
    return StopReason.PREEMPT
