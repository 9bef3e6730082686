"""A run's lifecycle over the neutral run state (PodRun), whoever executes it
(docs/agent.md, "Workload lifecycle"; docs/executors.md). Executors report what they
saw as `RunReport`s: pushed at any time (`runs_observed`), or returned by `observe` each
tick. Each report is applied in one transaction; the nodes it frees are reconciled after
commit (waiting pods start once the devices they need are released).

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
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from scheduler_core.choices import PLACED_STATES, EventType
from scheduler_core.engine import transitions
from scheduler_core.engine.transitions import Cause
from scheduler_core.live_events.recording import event_record, workload_state
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.runtime.executor import PortSeen, RunPhase, RunReport, StopReason
from scheduler_core.runtime.reconcile import reconcile
from scheduler_core.services.runtime import Completion, workload_requeue, workloads_complete

logger = logging.getLogger(__name__)

ENDED = {
    RunPhase.EXITED: PodRunState.EXITED,
    RunPhase.START_FAILED: PodRunState.START_FAILED,
    RunPhase.LOST: PodRunState.LOST,
}


def runs_observed(reports: Iterable[RunReport]) -> list[int]:
    """Apply what an executor saw (each report in its own transaction); the nodes whose
    devices were freed, and those of the failed workloads' other pods, are reconciled
    after commit. Returns the ids of the runs that ended."""
    ended: list[int] = []
    for report in reports:
        with transaction.atomic():
            if run_observed(report):
                ended.append(report.run_id)
    if ended:
        nodes = _nodes_to_reconcile(ended)
        transaction.on_commit(lambda: reconcile(node_ids=nodes))
    return ended


def _nodes_to_reconcile(run_ids: list[int]) -> list[int]:
    """The runs' nodes, and the nodes of their workloads' other live runs (a failure
    stops them); one query."""
    workloads = PodRun.objects.filter(pk__in=run_ids).values("workload_id")
    runs = PodRun.objects.filter(
        Q(pk__in=run_ids) | Q(workload_id__in=workloads, state__in=LIVE_RUN_STATES)
    )
    return sorted(set(runs.values_list("node_id", flat=True)))


def known_run(run_id: int, *, node_id: int | None, epoch: int | None) -> PodRun | None:
    """The run a report is about, if the reporter may speak of it. A report may carry
    an epoch the run had before its start was sent again (the same run, one process per
    run id on a node): only one above the run's epoch is refused."""
    run = PodRun.objects.filter(pk=run_id).first()
    if run is None or (node_id is not None and run.node_id != node_id) or (
        epoch is not None and epoch > run.epoch
    ):  # fmt: skip
        logger.warning(
            "a report of run %s (node %s, epoch %s) matches none of Fairway's runs; ignored",
            run_id, node_id, epoch,
        )  # fmt: skip
        return None
    return run


def run_observed(report: RunReport) -> bool:
    """Apply one report (inside a transaction); True when the run ended (its devices are
    free). Lock order: the workload, then its runs, then allocations."""
    found = known_run(report.run_id, node_id=report.node_id, epoch=report.epoch)
    if found is None:
        return False
    workload = (
        Workload.objects.select_for_update(of=("self",))  # its events name its project
        .select_related("project")
        .get(pk=found.workload_id)
    )
    run = (
        PodRun.objects.select_for_update(of=("self",))  # the run only: nodes come first
        .select_related("node__pool")
        .get(pk=report.run_id)
    )
    if run.state not in LIVE_RUN_STATES:
        return False  # a repeat, or a late report of a run that ended
    _note_executor_facts(run, report)
    if report.phase == RunPhase.RUNNING:
        _running(workload, run, report.at)
        return False
    if report.phase not in ENDED:
        return False  # `starting`: nothing new
    stopped_by_fairway = bool(run.stop_reason) or run.allocation_id is None
    run.state = ENDED[report.phase]
    run.exit_code = report.exit_code
    run.signal = report.signal or ""
    run.reason = report.reason or ""
    run.ended_at = report.at
    if run.state == PodRunState.LOST:
        run.stop_reason = run.stop_reason or StopReason.LOST
    run.save(update_fields=["state", "exit_code", "signal", "reason", "ended_at", "stop_reason"])
    if stopped_by_fairway or workload.status not in PLACED_STATES:
        return True  # its workload was re-queued or ended already: only the run ends
    if run.state == PodRunState.EXITED and report.exit_code == 0:
        _maybe_complete(workload, report.at)
    else:
        _run_failed(workload, run, report.at)
    return True


def _ports(run: PodRun, seen: tuple[PortSeen, ...]) -> list[dict[str, Any]]:
    """Where the run's ports listen, a port without a host on its node's address."""
    node_host = run.node.address or run.node.name
    return [{"name": p.name, "host": p.host or node_host, "port": p.port} for p in seen]


def _note_executor_facts(run: PodRun, report: RunReport) -> None:
    """Keep what only the executor knows: its id of the run, the devices it chose, where
    its ports listen."""
    fields = []
    if report.ports is not None and (ports := _ports(run, report.ports)) != run.ports:
        run.ports = ports
        fields.append("ports")
    if report.external_id and report.external_id != run.external_id:
        run.external_id = report.external_id
        fields.append("external_id")
    if report.devices is not None and list(report.devices) != list(run.gpu_devices or []):
        run.gpu_devices = list(report.devices)
        fields.append("gpu_devices")
        if run.allocation_id is not None:
            Allocation.objects.filter(pk=run.allocation_id).update(gpu_devices=run.gpu_devices)
    if fields:
        run.save(update_fields=fields)


def _running(workload: Workload, run: PodRun, at: datetime) -> None:
    if run.started_at is None:
        run.started_at = at
    if run.state == PodRunState.STARTING:
        run.state = PodRunState.RUNNING
    run.save(update_fields=["state", "started_at"])
    if run.allocation_id is None:
        return
    pods = _pods_with_run(workload, GOING)
    if not pods or not all(going for _, going in pods):
        return
    if transitions.mark_running(workload):
        workload.save(update_fields=["status", "updated_at"])
        which = "every pod runs" if len(pods) > 1 else "its pod runs"
        nodes = [name for name, _ in pods]
        event_record(
            type=EventType.RUNNING, workload=workload, pool=run.node.pool, at=at,
            reason=f"{which} ({run.node.name} reported it)",
            state=workload_state(workload, nodes=nodes),
        )  # fmt: skip


GOING = (PodRunState.RUNNING, PodRunState.EXITED)


def _pods_with_run(workload: Workload, states: Iterable[str], **run: Any) -> list[tuple[str, bool]]:
    """(node name, whether a run of it is in `states` and matches `run`) per pod of
    `workload`, by group and index: one query answers "does every pod run / is every pod
    done", and names the nodes for the live event."""
    runs = PodRun.objects.filter(allocation_id=OuterRef("pk"), state__in=list(states), **run)
    pods = (
        Allocation.objects.filter(workload=workload)
        .annotate(has_run=Exists(runs))
        .order_by("group", "pod_index")
        .values_list("node__name", "has_run")
    )
    return [(str(name), bool(has)) for name, has in pods]


def _maybe_complete(workload: Workload, at: datetime) -> None:
    """A pod exited 0: the workload is completed once every pod has."""
    if all(done for _, done in _pods_with_run(workload, [PodRunState.EXITED], exit_code=0)):
        workloads_complete(completions=[Completion(workload.pk, workload.started_at, at)])


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
