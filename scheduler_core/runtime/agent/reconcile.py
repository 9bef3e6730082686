"""Desired against actual state on agent nodes (docs/agent.md, "Desired and actual
state: reconcile").

Desired: the Allocation rows on agent nodes (what the engine decided). Actual: PodRuns.
`reconcile()` runs after every cycle commit, on every agent report and on agent connect:

1. an allocation that has never had a run gets one (the node's next epoch) and its
   agent a `start`, once none of its devices is held by a live run of another pod (or,
   for a fractional share, once it fits beside them); until then it waits: the engine may
   place a pod on a GPU whose previous process is still stopping, the agent is told to
   start it only once that process is gone. So no device ever has two processes.
2. a live run that lost its allocation (evicted, moved, shrunk, cancelled, a peer failed)
   and was not told to stop yet gets a `signal` with the pool's grace period.

Each node is reconciled in its own transaction under its row lock, so the worker (after a
cycle) and the agents' consumers (after a report) can call it at once; epochs are taken
under that lock and never reused. Lock order everywhere: nodes, workloads, runs,
allocations. Messages go out after commit (channel.send_to_node).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone
from fairway_agent.protocol import STOP_CANCEL, STOP_PREEMPT

from scheduler_core.choices import PLACED_STATES, Backend, NodeState, WorkloadStatus
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.runtime.agent import channel
from scheduler_core.runtime.agent.env import Pod, distributed_env

logger = logging.getLogger(__name__)

FULL = 1.0 + 1e-9  # a device's share, with room for rounding


@dataclass
class ReconcileReport:
    """What one reconcile did: runs started (or started again), runs told to stop, and
    allocations still waiting for their devices to be released."""

    started: list[int] = field(default_factory=list)
    stopped: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)


def reconcile(
    *, node_ids: Iterable[int] | None = None, resend: Iterable[int] = ()
) -> ReconcileReport:
    """Start what is placed and not started, stop what runs and is no longer placed, on
    every agent node with work (only `node_ids`, when given); runs `resend` (starting,
    never reported: their agent reconnected without them) get their start again."""
    report = ReconcileReport()
    resend = set(resend)
    wanted = None if node_ids is None else set(node_ids)
    for node_id in sorted(_nodes_with_work(wanted) | _nodes_of(resend)):
        with transaction.atomic():
            _reconcile_node(node_id, report, resend)
    return report


def _nodes_with_work(wanted: set[int] | None) -> set[int]:
    starts = Allocation.objects.filter(node__pool__backend=Backend.AGENT, runs__isnull=True)
    stops = PodRun.objects.filter(
        state__in=LIVE_RUN_STATES, allocation__isnull=True, stop_sent_at__isnull=True
    )
    if wanted is not None:
        starts = starts.filter(node_id__in=wanted)
        stops = stops.filter(node_id__in=wanted)
    return set(starts.values_list("node_id", flat=True)) | set(
        stops.values_list("node_id", flat=True)
    )


def _nodes_of(runs: set[int]) -> set[int]:
    if not runs:
        return set()
    return set(PodRun.objects.filter(pk__in=runs).values_list("node_id", flat=True))


def _reconcile_node(node_id: int, report: ReconcileReport, resend: set[int]) -> None:
    node = (
        Node.objects.select_for_update(of=("self",))
        .select_related("pool")
        .filter(pk=node_id)
        .first()
    )
    if node is None or node.pool.backend != Backend.AGENT:
        return
    live = list(
        PodRun.objects.select_for_update()
        .filter(node=node, state__in=LIVE_RUN_STATES)
        .order_by("pk")
    )
    _stop_unwanted(node, live, report)
    if node.state == NodeState.DOWN:
        return  # its runs are lost; its allocations are gone or going
    allocations = list(Allocation.objects.select_for_update().filter(node=node).order_by("pk"))
    started = set(
        PodRun.objects.filter(allocation__in=allocations).values_list("allocation_id", flat=True)
    )
    fresh = [a for a in allocations if a.pk not in started]
    again = [r for r in live if r.pk in resend and r.state == PodRunState.STARTING]
    if not fresh and not again:
        return
    held: dict[int, float] = defaultdict(float)
    for run in live:
        for device in run.gpu_devices or ():
            held[device] += run.gpu_fraction
    starts = StartMessages(node, [a.workload_id for a in fresh] + [r.workload_id for r in again])
    new_runs = []
    for a in fresh:
        if not starts.wanted(a.workload_id):
            continue
        if any(held[d] + a.gpu_fraction > FULL for d in a.gpu_devices or ()):
            report.waiting.append(a.pk)  # its GPU is still releasing
            continue
        for d in a.gpu_devices or ():
            held[d] += a.gpu_fraction
        node.last_epoch += 1
        new_runs.append(
            PodRun(
                workload_id=a.workload_id, allocation=a, node=node, group=a.group,
                pod_index=a.pod_index, epoch=node.last_epoch, gpu_devices=a.gpu_devices,
                gpu_fraction=a.gpu_fraction, state=PodRunState.STARTING,
            )
        )  # fmt: skip
    if new_runs:
        Node.objects.filter(pk=node.pk).update(last_epoch=node.last_epoch)
        PodRun.objects.bulk_create(new_runs)
        # (bulk_create sets primary keys on PostgreSQL and SQLite alike)
    by_pk = {a.pk: a for a in allocations}
    for run in again + new_runs:
        allocation = by_pk.get(run.allocation_id) if run.allocation_id else None
        if allocation is None or not starts.wanted(run.workload_id):
            continue
        channel.send_to_node(node.pk, "start", **starts.message(run, allocation))
        report.started.append(run.pk)


def _stop_unwanted(node: Node, live: list[PodRun], report: ReconcileReport) -> None:
    """Signal every live run of `node` that lost its allocation and was not told yet."""
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
        channel.send_to_node(
            node.pk, "signal", run=run.pk, reason=run.stop_reason,
            grace_period=node.pool.grace_period,
        )  # fmt: skip
        report.stopped.append(run.pk)


def stop_reason(status: str | None) -> str:
    """Why a run whose workload is now `status` is stopped: a workload that will run
    again (re-queued, moved, suspended) is preempted; one that will not is cancelled."""
    if status in (WorkloadStatus.CANCELLED, WorkloadStatus.FAILED, WorkloadStatus.COMPLETED):
        return STOP_CANCEL
    return STOP_PREEMPT


class StartMessages:
    """The `start` messages of one node's pods: what they run, their devices, and the
    distributed environment, read for all their workloads at once (two queries)."""

    def __init__(self, node: Node, workload_ids: list[int]) -> None:
        self.node = node
        ids = set(workload_ids)
        self.workloads = {
            w.pk: w for w in Workload.objects.filter(pk__in=ids).select_related("project")
        }
        self.pods: dict[int, list[Pod]] = defaultdict(list)
        for workload_id, group, pod_index, node_pk, address, name in Allocation.objects.filter(
            workload_id__in=ids
        ).values_list(
            "workload_id", "group", "pod_index", "node_id", "node__address", "node__name"
        ):
            self.pods[workload_id].append(Pod(group, pod_index, address or name, node_pk))

    def wanted(self, workload_id: int) -> bool:
        """Is the workload still placed (a start for it makes sense)?"""
        w = self.workloads.get(workload_id)
        return w is not None and w.status in PLACED_STATES

    def message(self, run: PodRun, allocation: Allocation) -> dict[str, Any]:
        w = self.workloads[run.workload_id]
        spec = w.spec or {}
        command = spec.get("command")
        pods = self.pods[w.pk]
        pod = next(
            p for p in pods if (p.group, p.pod_index) == (allocation.group, allocation.pod_index)
        )
        return {
            "run": run.pk,
            "epoch": run.epoch,
            "workload": {"id": w.pk, "name": w.name, "project": w.project.name},
            "argv": [str(a) for a in command] if isinstance(command, list) else None,
            "shell": command if isinstance(command, str) else None,
            "image": spec.get("image") or None,
            "env": distributed_env(
                workload_id=w.pk,
                workload_name=w.name,
                project=w.project.name,
                group_names=[g["name"] for g in w.pod_groups],
                pods=pods,
                pod=pod,
                spec_env=spec.get("env"),
            ),
            "gpus": list(run.gpu_devices or []),
            "gpu_fraction": run.gpu_fraction,
            "workdir": spec.get("workdir") or None,
            "grace_period": self.node.pool.grace_period,
            "checkpoint_key": f"{w.project.name}/{w.name}",
        }
