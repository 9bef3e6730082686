"""A Slurm pool's nodes kept in step with its partition (`sinfo --json`), each observe:

- a node of the partition Fairway does not have yet is added (GPUs, CPUs, memory, its
  address for peers);
- usable in Slurm -> `ready`; drained or draining -> `cordoned` (its running pods go on,
  no new ones land there); unknown (just after slurmctld restarted), not responding or
  failing -> `unreachable` (no new pods, its pods kept: Slurm itself marks it down if it
  stays away); down, or gone from the
  partition -> `down` (its workloads are re-queued as a fault);
- GPUs Slurm reports in use by jobs Fairway did not start are taken: the node offers only
  the others;
- the controller unreachable -> every ready node of the pool is `unreachable` (no new
  pods; running ones are kept), `ready` again once it answers.

Fairway follows Slurm only where Slurm made the last change: a node an admin cordoned in
Fairway stays cordoned (the state Slurm last gave is kept in `capabilities["slurm"]`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db import transaction

from scheduler_core.choices import NodeState
from scheduler_core.models import Allocation, Node, NodePool
from scheduler_core.runtime.executors.slurm.records import SlurmNode
from scheduler_core.services.cluster import (
    node_follow_executor,
    node_mark_down,
    node_mark_reachable,
    node_mark_unreachable,
)


@dataclass
class NodeSync:
    """What one sync changed, by node name."""

    added: list[str] = field(default_factory=list)
    down: list[str] = field(default_factory=list)
    cordoned: list[str] = field(default_factory=list)
    ready: list[str] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)


def wanted_state(node: SlurmNode | None) -> tuple[str, str]:
    """(Fairway state, why) for a Slurm node (None: gone from the partition)."""
    if node is None:
        return NodeState.DOWN, "no longer in the Slurm partition"
    if node.usable:
        return NodeState.READY, "usable in Slurm"
    if node.state in ("down", "future"):
        return NodeState.DOWN, f"{node.why_unusable} in Slurm"
    if node.flags & {"DRAIN", "DRAINING", "DRAINED"}:
        return NodeState.CORDONED, f"drained in Slurm ({node.why_unusable})"
    # unknown (for seconds after slurmctld restarts), not responding (for a moment after a
    # resume, too), failing, powering: no new pods, its pods are kept; Slurm marks it down
    # if it stays away
    return NodeState.UNREACHABLE, f"{node.why_unusable} in Slurm"


def sync_nodes(
    pool: NodePool, seen: list[SlurmNode], foreign: Mapping[str, int], report: NodeSync
) -> None:
    """Bring the pool's nodes in step with its partition's `seen` nodes; `foreign`: GPUs
    jobs Fairway did not start hold on each node."""
    by_name = {n.name: n for n in seen}
    known = {n.name: n for n in Node.objects.filter(pool=pool)}
    for name, slurm_node in by_name.items():
        node = known.get(name)
        if node is None:
            node = _add(pool, slurm_node, report)
            if node is None:
                continue
        _update_capacity(node, slurm_node, foreign.get(name, 0))
    for name, node in {**known, **{n.name: n for n in Node.objects.filter(pool=pool)}}.items():
        _follow(node, *wanted_state(by_name.get(name)), report=report)


def _add(pool: NodePool, slurm_node: SlurmNode, report: NodeSync) -> Node | None:
    if Node.objects.filter(name=slurm_node.name).exists():
        return None  # a node of that name serves another pool: left alone
    node = Node.objects.create(
        pool=pool, name=slurm_node.name, gpu_count=slurm_node.gpus,
        gpu_model=slurm_node.gpu_model, cpu=float(slurm_node.cpus),
        memory=round(slurm_node.memory_mib / 1024, 1), address=slurm_node.address,
        capabilities={"slurm": {"state": NodeState.READY, "pinnable": slurm_node.pinnable}},
    )  # fmt: skip
    report.added.append(node.name)
    return node


def _update_capacity(node: Node, slurm_node: SlurmNode, foreign: int) -> None:
    # never below the highest device index Fairway's own pods hold there: the engine
    # numbers a node's devices 0..gpu_count-1 (a held job waits for the GPUs meanwhile)
    placed = Allocation.objects.filter(node=node).values_list("gpu_devices", flat=True)
    highest = max((int(d) for devices in placed for d in devices or ()), default=-1)
    offered = max(slurm_node.gpus - foreign, highest + 1, 0)
    if (node.gpu_count, node.address) != (offered, slurm_node.address):
        node.gpu_count = offered
        node.address = slurm_node.address
        node.save(update_fields=["gpu_count", "address"])


def _follow(node: Node, state: str, why: str, *, report: NodeSync) -> None:
    """Give the node Slurm's state, where Slurm made its last change."""
    last = (node.capabilities or {}).get("slurm", {}).get("state", NodeState.READY)
    if node.state == state or node.state not in (last, NodeState.UNREACHABLE):
        return
    reason = f"node {node.name}: {why}"
    with transaction.atomic():
        if state == NodeState.DOWN:
            node_mark_down(node=node, reason=reason)
            report.down.append(node.name)
        else:
            node_follow_executor(node=node, state=state, reason=reason)
            changed: dict[str, list[str]] = {
                NodeState.CORDONED: report.cordoned, NodeState.READY: report.ready,
            }  # fmt: skip
            changed.get(state, report.unreachable).append(node.name)
        Node.objects.filter(pk=node.pk).update(
            capabilities={**(node.capabilities or {}), "slurm": {"state": state}}
        )


def mark_unreachable(pool: NodePool, why: str, report: NodeSync) -> None:
    """The controller does not answer: the pool's ready nodes take no new pods."""
    for node in Node.objects.filter(pool=pool, state=NodeState.READY):
        node_mark_unreachable(node=node, reason=f"Slurm does not answer: {why}")
        report.unreachable.append(node.name)


def mark_reachable(pool: NodePool, report: NodeSync) -> None:
    """The controller answers again."""
    for node in Node.objects.filter(pool=pool, state=NodeState.UNREACHABLE):
        node_mark_reachable(node=node, reason="Slurm answers again")
        report.ready.append(node.name)
