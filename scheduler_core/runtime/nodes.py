"""Nodes an executor discovers (Slurm's `sinfo`): what its `observe` says of each of its
pools' nodes (`Observation.nodes`), kept in step with the Node rows. A node it reports is
heard from now (its heartbeat) and takes its GPUs, CPU and memory as reported; a new one
is added; one reported drained is cordoned, down is down (its workloads re-queued as a
fault); one no longer reported is down. A node the executor marked down or drained is
ready again once reported ready; a node an admin cordoned or marked down stays so."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from scheduler_core.choices import NodeState
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Node
from scheduler_core.runtime.executor import NodeSeen
from scheduler_core.services.cluster import (
    node_mark_down,
    node_mark_drained,
    node_mark_reachable,
)

SHAPE = ("gpu_count", "gpu_model", "cpu", "memory", "address")


def nodes_observed(*, pool_id: int, seen: Sequence[NodeSeen], now: datetime) -> None:
    """Keep pool `pool_id`'s nodes in step with what its executor `seen`."""
    known = {n.name: n for n in Node.objects.filter(pool_id=pool_id).select_related("pool")}
    for item in seen:
        node = known.pop(item.name, None)
        if node is None:
            node = _added(pool_id, item, now)
        else:
            _reshaped(node, item, now)
        _follow(node, item)
    for node in known.values():
        if node.state != NodeState.DOWN:
            node_mark_down(node=node, reason=f"node {node.name} is no longer reported", silent=True)


def _added(pool_id: int, item: NodeSeen, now: datetime) -> Node:
    with transaction.atomic():
        node = Node.objects.create(
            pool_id=pool_id, name=item.name, last_heartbeat=now,
            **{field: getattr(item, field) for field in SHAPE},
        )  # fmt: skip
        request_cycle()
    return Node.objects.select_related("pool").get(pk=node.pk)


def _reshaped(node: Node, item: NodeSeen, now: datetime) -> None:
    changed = [f for f in SHAPE if getattr(node, f) != getattr(item, f)]
    for field in changed:
        setattr(node, field, getattr(item, field))
    node.last_heartbeat = now
    if changed:
        with transaction.atomic():
            node.save(update_fields=[*changed, "last_heartbeat"])
            request_cycle()
    else:
        Node.objects.filter(pk=node.pk).update(last_heartbeat=now)


def _follow(node: Node, item: NodeSeen) -> None:
    """Take the state the executor reports, where it is the executor's to give."""
    why = item.reason or f"its executor says node {node.name} is {item.state}"
    if item.state == NodeState.DOWN and node.state != NodeState.DOWN:
        node_mark_down(node=node, reason=why, silent=True)
    elif item.state == NodeState.CORDONED and node.state == NodeState.READY:
        node_mark_drained(node=node, reason=why)
    elif item.state == NodeState.READY and node.state != NodeState.READY:
        node_mark_reachable(node=node, reason=f"node {node.name} is ready again")
