"""A run's lifecycle over the neutral run state (PodRun), whoever executes it
(docs/agent.md, "Workload lifecycle"; docs/executors.md). Executors report what they
saw as `RunReport`s: pushed at any time (`runs_observed`), or returned by `observe` each
tick. The reports that arrive together are applied in one transaction, each step for the
whole batch at once (`Observation`); the nodes they free are reconciled after commit
(waiting pods start once the devices they need are released).

- A pod runs: its run is `running`; once every pod of a `starting` workload runs, the
  workload is `running` (a live event says so at once).
- A pod exits 0: it is done; once every pod has, the workload is `completed`.
- A wanted pod exits non-zero, cannot start or is lost: the workload's command failed
  that run. Its other pods are stopped (reason failed-peer), and it is re-queued with a
  back-off while its restarts allow, else it fails for good (engine.transitions,
  Cause.FAILED_RUN); each attempt is recorded as a failed run with its exit code, never
  as a preemption.
- A run that Fairway was stopping (preempted, cancelled, a peer failed) only ends: the
  scheduler already re-queued or ended its workload, whatever its exit code.

A report of another node's run, of an unknown run or of an epoch the run never had
changes nothing.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from scheduler_core.choices import PLACED_STATES, EventType
from scheduler_core.db.bulk_writes import update_rows
from scheduler_core.engine import transitions
from scheduler_core.engine.transitions import Cause
from scheduler_core.live_events.batch import EventBatch
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.models.versioned import bump_version
from scheduler_core.runtime.executor import PortSeen, RunPhase, RunReport, StopReason
from scheduler_core.runtime.reconcile import reconcile
from scheduler_core.services.runtime import Completion, workload_requeue, workloads_complete

logger = logging.getLogger(__name__)

ENDED = {
    RunPhase.EXITED: PodRunState.EXITED,
    RunPhase.START_FAILED: PodRunState.START_FAILED,
    RunPhase.LOST: PodRunState.LOST,
}
ENDED_FIELDS = frozenset({"state", "exit_code", "signal", "reason", "ended_at", "stop_reason"})


def runs_observed(reports: Iterable[RunReport]) -> list[int]:
    """Apply what an executor saw, in order, in one transaction (`_apply_batch`); the nodes
    whose devices were freed, and those of the failed workloads' other pods, are
    reconciled after commit. Returns the ids of the runs that ended."""
    reports = list(reports)
    if not reports:
        return []
    with transaction.atomic():
        ended = _apply_batch(reports)
    if ended:
        transaction.on_commit(lambda: reconcile(node_ids=_nodes_to_reconcile(ended)))
    return ended


def _nodes_to_reconcile(run_ids: list[int]) -> QuerySet[PodRun, Any]:
    """The runs' nodes, and the nodes of their workloads' other live runs (a failure
    stops them): a query the reconcile runs inside its own."""
    workloads = PodRun.objects.filter(pk__in=run_ids).values("workload_id")
    runs = PodRun.objects.filter(
        Q(pk__in=run_ids) | Q(workload_id__in=workloads, state__in=LIVE_RUN_STATES)
    )
    return runs.values("node_id")


def known_run(run_id: int, *, node_id: int | None, epoch: int | None) -> PodRun | None:
    """The run a report is about, if the reporter may speak of it (`_may_speak`)."""
    run = PodRun.objects.filter(pk=run_id).first()
    return run if _may_speak(run, run_id, node_id=node_id, epoch=epoch) else None


def _may_speak(run: PodRun | None, run_id: int, *, node_id: int | None, epoch: int | None) -> bool:
    """Whether a report of run `run_id` (found: `run`) from node `node_id` under `epoch`
    counts. A report may carry an epoch the run had before its start was sent again
    (the same run, one process per run id on a node): only one above the run's epoch is
    refused."""
    if run is None or (node_id is not None and run.node_id != node_id) or (
        epoch is not None and epoch > run.epoch
    ):  # fmt: skip
        logger.warning(
            "a report of run %s (node %s, epoch %s) matches none of Fairway's runs; ignored",
            run_id, node_id, epoch,
        )  # fmt: skip
        return False
    return True


def run_observed(report: RunReport) -> bool:
    """Apply one report (inside a transaction); True when the run ended (its devices are
    free)."""
    return bool(_apply_batch([report]))


def _apply_batch(reports: list[RunReport]) -> list[int]:
    """Apply `reports` in order (inside a transaction): their runs' rows first, then what
    follows for their workloads (running, failed, completed), each step for the whole
    batch at once. Returns the ids of the runs that ended."""
    batch = Observation.locked(reports)
    for report in reports:
        batch.apply(report)
    batch.write()
    return batch.ended


@dataclass
class Observation:
    """One batch of reports over the rows they are about, locked in the order used
    everywhere: workloads, then runs (by primary key), then allocations."""

    workloads: dict[int, Workload]
    runs: dict[int, PodRun]
    ended: list[int] = field(default_factory=list)
    changed: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    went: dict[int, tuple[PodRun, datetime]] = field(default_factory=dict)  # a pod runs
    done: dict[int, datetime] = field(default_factory=dict)  # a pod exited 0
    failed: dict[int, tuple[PodRun, datetime]] = field(default_factory=dict)  # first failure

    @classmethod
    def locked(cls, reports: list[RunReport]) -> Observation:
        run_ids = sorted({r.run_id for r in reports})
        owners = PodRun.objects.filter(pk__in=run_ids).values("workload_id")
        workloads = (
            Workload.objects.select_for_update(of=("self",), no_key=True)  # events name its project
            .select_related("project")
            .filter(pk__in=owners)  # one query: the runs' workloads, locked
            .order_by("pk")
        )
        runs = (
            PodRun.objects.select_for_update(of=("self",), no_key=True)  # nodes come first
            .select_related("node__pool")
            .filter(pk__in=run_ids)
            .order_by("pk")
        )
        return cls({w.pk: w for w in workloads}, {r.pk: r for r in runs})

    def apply(self, report: RunReport) -> None:
        """Apply one report to its run (in memory), and note what it means for the
        workload."""
        run = self.runs.get(report.run_id)
        speaks = _may_speak(run, report.run_id, node_id=report.node_id, epoch=report.epoch)
        if not speaks or run is None:
            return
        if run.state not in LIVE_RUN_STATES:
            return  # a repeat, or a late report of a run that ended
        self.changed[run.pk] |= _note_executor_facts(run, report)
        if report.phase == RunPhase.RUNNING:
            self._running(run, report.at)
        elif report.phase in ENDED:
            self._ended(run, report)

    def _running(self, run: PodRun, at: datetime) -> None:
        if run.started_at is None:
            run.started_at = at
            self.changed[run.pk].add("started_at")
        if run.state == PodRunState.STARTING:
            run.state = PodRunState.RUNNING
            self.changed[run.pk].add("state")
        if run.allocation_id is not None:
            self.went[run.workload_id] = (run, at)

    def _ended(self, run: PodRun, report: RunReport) -> None:
        stopped_by_fairway = bool(run.stop_reason) or run.allocation_id is None
        run.state = ENDED[report.phase]
        run.exit_code = report.exit_code
        run.signal = report.signal or ""
        run.reason = report.reason or ""
        run.ended_at = report.at
        if run.state == PodRunState.LOST:
            run.stop_reason = run.stop_reason or StopReason.LOST
        self.changed[run.pk] |= ENDED_FIELDS
        self.ended.append(run.pk)
        workload = self.workloads.get(run.workload_id)
        if (
            stopped_by_fairway or workload is None or workload.status not in PLACED_STATES
            or workload.pk in self.failed
        ):  # fmt: skip
            return  # its workload was re-queued or ended already: only the run ends
        if run.state == PodRunState.EXITED and report.exit_code == 0:
            self.done[workload.pk] = report.at
        else:
            self.failed[workload.pk] = (run, report.at)

    def write(self) -> None:
        """Write the runs, then their workloads' transitions: running, failed (each
        re-queued or failed for good), completed."""
        runs = [self.runs[pk] for pk, fields in self.changed.items() if fields]
        update_rows(runs, sorted(set().union(*self.changed.values())))
        self._mark_running()
        for workload_id, (run, at) in self.failed.items():
            _run_failed(self.workloads[workload_id], run, at)
        self._complete()

    def _mark_running(self) -> None:
        """Starting workloads whose every pod now runs are running (a live event each)."""
        pods = _pods_with_run(list(self.went), GOING)
        events = EventBatch(timezone.now())
        running = []
        for workload_id, (run, at) in self.went.items():
            workload, mine = self.workloads[workload_id], pods.get(workload_id)
            if not mine or not all(going for _, going in mine):
                continue
            if transitions.mark_running(workload):
                workload.updated_at = timezone.now()
                bump_version(workload)
                running.append(workload)
                which = "every pod runs" if len(mine) > 1 else "its pod runs"
                events.add(
                    type=EventType.RUNNING, workload=workload, pool_id=run.node.pool_id,
                    reason=f"{which} ({run.node.name} reported it)", at=at,
                    nodes=[name for name, _ in mine],
                )  # fmt: skip
        update_rows(running, ["status", "updated_at", "version"])
        events.flush()

    def _complete(self) -> None:
        """Workloads whose every pod exited 0 are completed (one call for them all)."""
        wanted = [pk for pk in self.done if pk not in self.failed]
        pods = _pods_with_run(wanted, [PodRunState.EXITED], exit_code=0)
        completions = [
            Completion(pk, self.workloads[pk].started_at, self.done[pk])
            for pk in wanted
            if all(done for _, done in pods.get(pk, []))
        ]
        workloads_complete(completions=completions)


def _ports(run: PodRun, seen: tuple[PortSeen, ...]) -> list[dict[str, Any]]:
    """Where the run's ports listen, a port without a host on its node's address."""
    node_host = run.node.address or run.node.name
    return [{"name": p.name, "host": p.host or node_host, "port": p.port} for p in seen]


def _note_executor_facts(run: PodRun, report: RunReport) -> set[str]:
    """Keep what only the executor knows: its id of the run, the devices it chose, where
    its ports listen (in memory; returns the fields changed)."""
    fields = set()
    if report.ports is not None and (ports := _ports(run, report.ports)) != run.ports:
        run.ports = ports
        fields.add("ports")
    if report.external_id and report.external_id != run.external_id:
        run.external_id = report.external_id
        fields.add("external_id")
    if report.devices is not None and list(report.devices) != list(run.gpu_devices or []):
        run.gpu_devices = list(report.devices)
        fields.add("gpu_devices")
        if run.allocation_id is not None:
            Allocation.objects.filter(pk=run.allocation_id).update(gpu_devices=run.gpu_devices)
    return fields


GOING = (PodRunState.RUNNING, PodRunState.EXITED)


def _pods_with_run(
    workload_ids: list[int], states: Iterable[str], **run: Any
) -> dict[int, list[tuple[str, bool]]]:
    """Per workload, (node name, whether a run of it is in `states` and matches `run`)
    per pod, by group and index: one query answers "does every pod run / is every pod
    done" for them all, and names the nodes for the live events."""
    if not workload_ids:
        return {}
    runs = PodRun.objects.filter(allocation_id=OuterRef("pk"), state__in=list(states), **run)
    rows = (
        Allocation.objects.filter(workload_id__in=workload_ids)
        .annotate(has_run=Exists(runs))
        .order_by("workload_id", "group", "pod_index")
        .values_list("workload_id", "node__name", "has_run")
    )
    pods: dict[int, list[tuple[str, bool]]] = defaultdict(list)
    for workload_id, name, has in rows:
        pods[workload_id].append((str(name), bool(has)))
    return pods


def failure(run: PodRun) -> str:
    """Why a run failed, in words: the pod, its node and its exit code (or why it could
    not start, or was lost)."""
    pod = f"pod {run.pod} on node {run.node.name}"
    if run.state == PodRunState.LOST:
        return f"{pod} was lost: {run.reason}"
    if run.state == PodRunState.START_FAILED:
        return f"{pod} could not start: {run.reason or 'no reason given'}"
    code = f"exited with code {run.exit_code}"
    return f"{pod} {code} (signal {run.signal})" if run.signal else f"{pod} {code}"


def _run_failed(workload: Workload, run: PodRun, at: datetime) -> None:
    """The workload's run failed: stop its other pods, then re-queue it with a back-off
    while its restarts allow, else fail it for good."""
    PodRun.objects.filter(workload=workload, state__in=LIVE_RUN_STATES, stop_reason="").exclude(
        pk=run.pk
    ).update(stop_reason=StopReason.FAILED_PEER)
    node: Node = run.node
    workload_requeue(
        workload=workload, cause=Cause.FAILED_RUN, why=failure(run), at=at, node=node,
        details={"pod": run.pod, "node": node.name, "exit_code": run.exit_code,
                 "signal": run.signal or None, "run": run.pk},
    )  # fmt: skip
