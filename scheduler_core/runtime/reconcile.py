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

An executor's nodes with work are reconciled together, in one transaction under their
row locks (each step one statement for all of them), so the worker (after a cycle) and
the reports can call it at once; epochs are taken under those locks and never reused.
Lock order everywhere: the nodes' send locks (in node order), nodes, workloads, runs,
allocations. The executor is called once after the commit with the starts (grouped by
workload: a gang's pods on several nodes in one launch) and stops, still under the send
locks (PostgreSQL advisory locks), so a node gets its starts in the order of their epochs
whoever sends them (an agent refuses a start whose epoch is below one it has seen).
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.db.bulk_writes import update_rows
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
M = TypeVar("M", Allocation, PodRun)

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
        nodes = sorted(owed[backend] | _nodes_of(backend, again))
        if not nodes:
            continue
        work = _Pass(executor)
        with _send_locks(nodes):
            with transaction.atomic():
                _reconcile_nodes(nodes, work, report, again)
            work.hand_over()
    return report


@contextlib.contextmanager
def _send_locks(node_ids: list[int]) -> Iterator[None]:
    """Hold the nodes' send locks, taken one by one in node order (so two reconciles
    never wait for each other in a circle); PostgreSQL only: elsewhere one process
    writes at a time."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        for node_id in node_ids:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [SEND_LOCK_CLASS, node_id])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_unlock(%s, n) FROM unnest(%s::int[]) AS n",
                [SEND_LOCK_CLASS, node_ids],
            )


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


def lock_nodes(node_ids: list[int], backend: str) -> list[tuple[Node, list[PodRun]]]:
    """The nodes `node_ids` of `backend`'s pools (those that exist), locked for this
    transaction in primary-key order, and their live runs as they are now. The runs are
    not locked: their agents' reports store them meanwhile (a run that ends unseen here
    only keeps its devices held until that report's own reconcile); the runs this
    reconcile changes are locked then (`_locked`). The node's lock keeps its key
    shareable: its agent's usage samples and events still commit meanwhile."""
    nodes = list(
        Node.objects.select_for_update(of=("self",), no_key=True)
        .select_related("pool")
        .filter(pk__in=node_ids, pool__backend=backend)
        .order_by("pk")
    )
    live: dict[int, list[PodRun]] = defaultdict(list)
    for run in PodRun.objects.filter(node__in=nodes, state__in=LIVE_RUN_STATES).order_by("pk"):
        live[run.node_id].append(run)
    return [(node, live[node.pk]) for node in nodes]


def _locked(model: type[M], rows: list[M], **still: Any) -> dict[int, M]:
    """`rows` that still match `still`, read again and locked (in primary-key order)."""
    if not rows:
        return {}
    query = model._default_manager.select_for_update(no_key=True)
    found = query.filter(pk__in=[r.pk for r in rows], **still).order_by("pk")
    return {r.pk: r for r in found}


def _reconcile_nodes(
    node_ids: list[int], work: _Pass, report: ReconcileReport, resend: set[int]
) -> None:
    """Reconcile the nodes in one transaction: each step for all of them at once."""
    locked = lock_nodes(node_ids, work.executor.backend)
    _stop_unwanted(locked, work, report)
    up = {node.pk: (node, live) for node, live in locked if node.state != NodeState.DOWN}
    # (a down node's runs are lost; its allocations are gone or going)
    again = list(
        _locked(
            PodRun,
            [r for _, live in up.values() for r in live if r.pk in resend],
            state=PodRunState.STARTING,
        ).values()
    )  # runs before allocations, as everywhere
    run = PodRun.objects.filter(allocation_id=OuterRef("pk"))
    unstarted: list[Allocation] = [
        a
        for a in Allocation.objects.filter(node_id__in=list(up))
        .annotate(started=Exists(run))
        .order_by("pk")
        if not a.started
    ]
    fresh = list(_locked(Allocation, unstarted).values())  # a cycle may be taking one away
    if not fresh and not again:
        return
    specs = Launches([a.workload_id for a in fresh] + [r.workload_id for r in again])
    again = [r for r in again if r.allocation_id is not None and specs.wanted(r.workload_id)]
    new_runs = _runs_for(up, fresh, again, specs, work, report)
    for r in again + new_runs:
        if r.allocation_id is None or not specs.wanted(r.workload_id):
            continue
        work.pods[r.workload_id].append(specs.pod(r, up[r.node_id][0]))
        work.specs.setdefault(r.workload_id, specs)
        report.started.append(r.pk)


def _runs_for(
    up: dict[int, tuple[Node, list[PodRun]]],
    fresh: list[Allocation],
    again: list[PodRun],
    specs: Launches,
    work: _Pass,
    report: ReconcileReport,
) -> list[PodRun]:
    """New epochs for the starts sent again and new runs for the fresh allocations whose
    devices are free, node by node; written at once (the runs, the nodes' last epochs)."""
    epochs = {pk: node.last_epoch for pk, (node, _) in up.items()}
    resent, placed = _by_node(again), _by_node(fresh)
    new_runs: list[PodRun] = []
    for pk, (node, live) in up.items():
        _new_epochs(node, resent[pk])
        new_runs += _new_runs(node, live, placed[pk], specs, work, report)
    if new_runs:
        PodRun.objects.bulk_create(new_runs)
        # (bulk_create sets primary keys on PostgreSQL and SQLite alike)
    moved = [node for pk, (node, _) in up.items() if node.last_epoch != epochs[pk]]
    update_rows(moved, ["last_epoch"])
    return new_runs


def _by_node(rows: list[M]) -> dict[int, list[M]]:
    grouped: dict[int, list[M]] = defaultdict(list)
    for row in rows:
        grouped[row.node_id].append(row)
    return grouped


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
    """A run (the node's next epoch; not written yet) for each fresh allocation of the
    node whose devices are free."""
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
    return new_runs


def _stop_unwanted(
    locked: list[tuple[Node, list[PodRun]]], work: _Pass, report: ReconcileReport
) -> None:
    """Stop every live run of the nodes that lost its allocation and was not told yet."""
    seen = [
        (node, r) for node, live in locked for r in live
        if r.allocation_id is None and r.stop_sent_at is None
    ]  # fmt: skip
    still = _locked(
        PodRun, [r for _, r in seen], state__in=LIVE_RUN_STATES, allocation__isnull=True,
        stop_sent_at__isnull=True,
    )  # fmt: skip
    unwanted = [(node, still[r.pk]) for node, r in seen if r.pk in still]
    if not unwanted:
        return
    statuses = dict(
        Workload.objects.filter(pk__in={r.workload_id for _, r in unwanted}).values_list(
            "pk", "status"
        )
    )
    now = timezone.now()
    for node, run in unwanted:
        run.stop_reason = run.stop_reason or stop_reason(statuses.get(run.workload_id))
        run.stop_sent_at = now
        run.state = PodRunState.STOPPING
        work.stops.append(
            Stop(
                run_id=run.pk, node_id=node.pk, external_id=run.external_id,
                reason=StopReason(run.stop_reason), grace_period=node.pool.grace_period,
            )
        )  # fmt: skip
        report.stopped.append(run.pk)
    update_rows([r for _, r in unwanted], ["stop_reason", "stop_sent_at", "state"])


def stop_reason(status: str | None) -> str:
    """Why a run whose workload is now `status` is stopped: a workload that will run
    again (re-queued, moved, suspended) is preempted; one that will not is cancelled."""
    if status in (WorkloadStatus.CANCELLED, WorkloadStatus.FAILED, WorkloadStatus.COMPLETED):
        return StopReason.CANCEL
    return StopReason.PREEMPT
