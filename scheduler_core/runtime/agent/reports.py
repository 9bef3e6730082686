"""What agents report, applied to runs and workloads (docs/agent.md, "Workload
lifecycle"). The `/ws/agents/` consumer calls these two functions; each applies the
report in one transaction and reconciles the node after commit (waiting pods start once
the devices they need are released).

- A pod runs: its run is `running`; once every pod of a `starting` workload runs, the
  workload is `running`.
- A pod exits 0: it is done; once every pod has, the workload is `completed`.
- A wanted pod exits non-zero or cannot start: the workload failed that run. Its other
  pods are stopped (reason failed-peer), it counts a restart and is re-queued while its
  backoff limit allows (None: always), else it fails for good; the reason names the pod,
  the node and the exit code (or why it could not start).
- A run that Fairway was stopping (preempted, cancelled, a peer failed) only ends: the
  scheduler already re-queued or ended its workload, whatever its exit code.

A report of another node's run, of an unknown run or of an older epoch changes nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from fairway_agent.protocol import (
    RUN_EXITED,
    RUN_RUNNING,
    RUN_START_FAILED,
    STOP_FAILED_PEER,
    STOP_LOST,
)

from scheduler_core.choices import PLACED_STATES, EventType, WorkloadStatus
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.runtime.agent.reconcile import reconcile, stop_reason
from scheduler_core.runtime.simulated import progress_kept
from scheduler_core.services.runtime import Completion, workloads_complete

logger = logging.getLogger(__name__)

ENDED = {RUN_EXITED: PodRunState.EXITED, RUN_START_FAILED: PodRunState.START_FAILED}


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
    """Node `node`'s agent says run `run_id` (of `epoch`) is now `state` (a protocol
    RUN_* state)."""
    with transaction.atomic():
        ended = _apply(
            node=node, run_id=run_id, epoch=epoch, state=state, exit_code=exit_code,
            signal=signal, reason=reason, at=at,
        )  # fmt: skip
        if ended:
            # the run's devices are free: what waits for them on its node may start, and
            # the peers it failed are told to stop (the same node or others)
            transaction.on_commit(lambda: reconcile(node_ids=_nodes_to_reconcile(node, run_id)))


def _nodes_to_reconcile(node: Node, run_id: int) -> list[int]:
    """The run's node, and the nodes of its workload's other live runs (a failure stops
    them)."""
    workload = PodRun.objects.filter(pk=run_id).values_list("workload_id", flat=True)
    peers = PodRun.objects.filter(workload_id__in=workload, state__in=LIVE_RUN_STATES)
    return sorted({node.pk, *peers.values_list("node_id", flat=True)})


def agent_hello(*, node: Node, runs: list[dict[str, Any]]) -> list[int]:
    """Node `node`'s agent (re)connected with `runs` (`{"run", "epoch", "state",
    "exit_code", "signal", "log_size"}`): apply what they say, end the live runs it no
    longer has, and return the ids of the runs it should keep (live and still wanted).
    Starts still owed to the node (new, or sent while it was away) go out after commit."""
    now = timezone.now()
    keep: list[int] = []
    resend: list[int] = []
    with transaction.atomic():
        seen: set[int] = set()
        for item in runs:
            run_id, epoch = item.get("run"), item.get("epoch")
            if not isinstance(run_id, int) or not isinstance(epoch, int):
                continue
            state = str(item.get("state"))
            if state in ENDED:
                _apply(
                    node=node, run_id=run_id, epoch=epoch, state=state,
                    exit_code=item.get("exit_code"), signal=item.get("signal"),
                    reason=item.get("reason"), at=now,
                )  # fmt: skip
                seen.add(run_id)
                continue
            run = _known(node, run_id, epoch)
            if run is None or run.state not in LIVE_RUN_STATES:
                continue  # unknown, or ended here: the agent stops it
            seen.add(run.pk)
            if state == RUN_RUNNING:
                _apply(
                    node=node, run_id=run_id, epoch=epoch, state=state, exit_code=None,
                    signal=None, reason=None, at=now,
                )  # fmt: skip
            if run.allocation_id is not None:
                keep.append(run.pk)
            elif run.stop_sent_at is None:
                # not wanted, and not signalled yet: the agent stops it on `welcome`
                status = (
                    Workload.objects.filter(pk=run.workload_id)
                    .values_list("status", flat=True)
                    .first()
                )
                PodRun.objects.filter(pk=run.pk).update(
                    state=PodRunState.STOPPING, stop_sent_at=now,
                    stop_reason=run.stop_reason or stop_reason(status),
                )  # fmt: skip
        for run in PodRun.objects.filter(node=node, state__in=LIVE_RUN_STATES).exclude(pk__in=seen):
            if run.state == PodRunState.STARTING and run.allocation_id is not None:
                resend.append(run.pk)  # its start never arrived: send it again
            else:
                _end_missing(node, run, now)
        transaction.on_commit(lambda: reconcile(node_ids=[node.pk], resend=resend))
    return keep


def _known(node: Node, run_id: int, epoch: int) -> PodRun | None:
    run = PodRun.objects.filter(pk=run_id).first()
    if run is None or run.node_id != node.pk or run.epoch != epoch:
        logger.warning(
            "node %s reported run %s (epoch %s), which is not one of its runs; ignored",
            node.name, run_id, epoch,
        )  # fmt: skip
        return None
    return run


def _end_missing(node: Node, run: PodRun, now: datetime) -> None:
    """A live run its agent no longer has (the agent restarted without it, or a start
    that was being stopped never ran): lost; its workload failed that run if it was
    wanted."""
    _apply(
        node=node, run_id=run.pk, epoch=run.epoch, state=RUN_START_FAILED, exit_code=None,
        signal=None, reason=f"node {node.name}'s agent no longer has this run", at=now,
        lost=True,
    )  # fmt: skip


def _apply(
    *,
    node: Node,
    run_id: int,
    epoch: int,
    state: str,
    exit_code: int | None,
    signal: str | None,
    reason: str | None,
    at: datetime,
    lost: bool = False,
) -> bool:
    """Apply one report (inside a transaction); True when the run ended (its devices are
    free). Lock order: the workload, then its runs, then allocations."""
    found = _known(node, run_id, epoch)
    if found is None:
        return False
    workload = Workload.objects.select_for_update().get(pk=found.workload_id)
    run = PodRun.objects.select_for_update().get(pk=run_id)
    if run.state not in LIVE_RUN_STATES:
        return False  # a repeat, or a late report of a run that ended
    if state == RUN_RUNNING:
        _running(workload, run, at)
        return False
    if state not in ENDED:
        return False  # `starting`: nothing new
    stopped_by_fairway = bool(run.stop_reason) or run.allocation_id is None
    run.state = PodRunState.LOST if lost else ENDED[state]
    run.exit_code = exit_code
    run.signal = signal or ""
    run.reason = reason or ""
    run.ended_at = at
    if lost:
        run.stop_reason = run.stop_reason or STOP_LOST
    run.save(update_fields=["state", "exit_code", "signal", "reason", "ended_at", "stop_reason"])
    if stopped_by_fairway or workload.status not in PLACED_STATES:
        return True  # its workload was re-queued or ended already: only the run ends
    if run.state == PodRunState.EXITED and exit_code == 0:
        _maybe_complete(workload, at)
    else:
        _run_failed(workload, run, node, _failure(run, node))
    return True


def _running(workload: Workload, run: PodRun, at: datetime) -> None:
    if run.started_at is None:
        run.started_at = at
    if run.state == PodRunState.STARTING:
        run.state = PodRunState.RUNNING
    run.save(update_fields=["state", "started_at"])
    if workload.status != WorkloadStatus.STARTING or run.allocation_id is None:
        return
    allocations = list(Allocation.objects.filter(workload=workload).values_list("pk", flat=True))
    going = set(
        PodRun.objects.filter(
            allocation_id__in=allocations, state__in=(PodRunState.RUNNING, PodRunState.EXITED)
        ).values_list("allocation_id", flat=True)
    )
    if allocations and going >= set(allocations):
        workload.status = WorkloadStatus.RUNNING
        workload.save(update_fields=["status", "updated_at"])


def _maybe_complete(workload: Workload, at: datetime) -> None:
    """A pod exited 0: the workload is completed once every pod has."""
    allocations = list(Allocation.objects.filter(workload=workload).values_list("pk", flat=True))
    done = set(
        PodRun.objects.filter(
            allocation_id__in=allocations, state=PodRunState.EXITED, exit_code=0
        ).values_list("allocation_id", flat=True)
    )
    if done >= set(allocations):
        workloads_complete(completions=[Completion(workload.pk, workload.started_at, at)])


def _failure(run: PodRun, node: Node) -> str:
    pod = f"pod {run.pod} on node {node.name}"
    if run.state == PodRunState.LOST:
        return f"{pod} was lost: {run.reason}"
    if run.state == PodRunState.START_FAILED:
        return f"{pod} could not start: {run.reason or 'no reason given'}"
    code = f"exited with code {run.exit_code}"
    return f"{pod} {code} (signal {run.signal})" if run.signal else f"{pod} {code}"


FIRST_RETRY_DELAY = 10.0  # seconds before a failed workload starts again, doubling
MAX_RETRY_DELAY = 300.0  # per restart up to this (as Kubernetes backs off crash loops)


def retry_delay(restarts: int) -> float:
    """Seconds a workload that failed waits before its restart number `restarts`."""
    return min(FIRST_RETRY_DELAY * 2 ** max(restarts - 1, 0), MAX_RETRY_DELAY)


def _run_failed(workload: Workload, run: PodRun, node: Node, why: str) -> None:
    """The workload's run failed (`why`): stop its other pods, count a restart, re-queue
    it while its backoff limit allows, else fail it for good (as faults do)."""
    now = timezone.now()
    PodRun.objects.filter(workload=workload, state__in=LIVE_RUN_STATES, stop_reason="").exclude(
        pk=run.pk
    ).update(stop_reason=STOP_FAILED_PEER)
    Allocation.objects.filter(workload=workload).delete()  # reconcile signals the others
    workload.progress_seconds = progress_kept(
        spec=workload.spec, progress=workload.progress_seconds, started_at=workload.started_at,
        stopped_at=now,
    )  # fmt: skip
    workload.started_at = None
    workload.pending_since = now
    workload.queue_position = None
    limit = workload.backoff_limit
    # a restart is counted when one is given (the engine's faults count the same way)
    out_of_restarts = limit is not None and workload.restarts + 1 > limit
    if not out_of_restarts:
        workload.restarts += 1
    details = {
        "kind": "failed", "restarts": workload.restarts, "pod": run.pod, "node": node.name,
        "exit_code": run.exit_code,
    }  # fmt: skip
    if out_of_restarts:
        workload.status = WorkloadStatus.FAILED
        workload.finished_at = now
        workload.pending_reason = ""
        workload.pending_reason_kind = ""
    else:
        delay = retry_delay(workload.restarts)
        workload.status = WorkloadStatus.PENDING
        workload.retry_at = now + timedelta(seconds=delay)
        workload.pending_reason = f"re-queued: {why}; starting again in {delay:g} s"
        workload.pending_reason_kind = "preempted"
    workload.save()
    if out_of_restarts:
        times = "once" if workload.restarts == 1 else f"{workload.restarts} times"
        event_record(
            type=EventType.FAILED, workload=workload, node=node, pool=node.pool, at=now,
            reason=f"{why}; restarted {times}, backoff limit {limit} used up"
            if workload.restarts else f"{why}; backoff limit {limit}: no restart",
            details=details,
        )  # fmt: skip
    else:
        event_record(
            type=EventType.PREEMPTED, workload=workload, node=node, pool=node.pool, at=now,
            reason=why, details=details,
        )  # fmt: skip
    request_cycle()
