"""A Slurm pool's nodes as its partition shows them (`sinfo --json`), handed to the run
layer's node sync (runtime.nodes) each observe:

- usable in Slurm -> `ready`; drained or draining -> `cordoned` (its running pods go on,
  no new ones land there); down, or gone from the partition -> `down` (its workloads
  are re-queued as a fault);
- unknown (for seconds after slurmctld restarts), not responding (for a moment after a
  resume, too) or failing -> `unreachable`, which leaves the node as it is: Slurm marks
  it down if it stays away, and a held job is released only on a usable node;
- GPUs held by jobs Fairway did not start are taken: the node offers only the others
  (never fewer than the highest device index Fairway's own pods hold there);
- the controller unreachable -> every ready node of the pool is `unreachable` (no new
  pods; running ones are kept), `ready` again once the partition is seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler_core.choices import NodeState
from scheduler_core.models import Allocation, Node, NodePool
from scheduler_core.runtime.executor import NodeSeen
from scheduler_core.runtime.executors.slurm.records import SlurmNode
from scheduler_core.services.cluster import node_mark_unreachable


def wanted_state(node: SlurmNode) -> tuple[str, str]:
    """(Fairway state, why) for a node of the partition."""
    if node.usable:
        return NodeState.READY, "usable in Slurm"
    if node.state in ("down", "future"):
        return NodeState.DOWN, f"{node.why_unusable} in Slurm"
    if node.flags & {"DRAIN", "DRAINING", "DRAINED"}:
        return NodeState.CORDONED, f"drained in Slurm ({node.why_unusable})"
    return NodeState.UNREACHABLE, f"{node.why_unusable} in Slurm"


def _highest_placed(pool: NodePool) -> dict[str, int]:
    """The highest device index Fairway's pods hold on each of the pool's nodes."""
    highest: dict[str, int] = {}
    for name, devices in Allocation.objects.filter(node__pool=pool).values_list(
        "node__name", "gpu_devices"
    ):
        for d in devices or ():
            highest[name] = max(highest.get(name, -1), int(d))
    return highest


def nodes_seen(
    pool: NodePool, partition: Sequence[SlurmNode], foreign: Mapping[str, int]
) -> list[NodeSeen]:
    """The pool's nodes as the run layer's node sync takes them; `foreign`: GPUs jobs
    Fairway did not start hold on each node."""
    highest = _highest_placed(pool)
    seen = []
    for node in partition:
        state, why = wanted_state(node)
        offered = max(node.gpus - foreign.get(node.name, 0), highest.get(node.name, -1) + 1, 0)
        seen.append(
            NodeSeen(
                name=node.name, state=state, gpu_count=offered, gpu_model=node.gpu_model,
                cpu=float(node.cpus), memory=round(node.memory_mib / 1024, 1),
                reason=f"node {node.name}: {why}", address=node.address,
            )
        )  # fmt: skip
    return seen


def mark_unreachable(pool: NodePool, why: str) -> list[str]:
    """The controller does not answer: the pool's ready nodes take no new pods."""
    names = []
    for node in Node.objects.filter(pool=pool, state=NodeState.READY):
        node_mark_unreachable(node=node, reason=f"Slurm does not answer: {why}")
        names.append(node.name)
    return names
