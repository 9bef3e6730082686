"""The environment a pod's process gets from the server (docs/agent.md, "Running a pod"):
who it is in its workload (group, index, rank), where its peers are, and the variables
PyTorch's distributed launcher reads (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
LOCAL_RANK). The agent adds the device variables itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BASE_PORT = 29500
PORT_SPAN = 20000  # ports BASE_PORT .. BASE_PORT + PORT_SPAN - 1, plus one per rank


@dataclass(frozen=True, slots=True)
class Pod:
    """One placed pod of a workload: its group, index in the group, and the host (node
    address, else node name) and node it runs on."""

    group: str
    pod_index: int
    host: str
    node_id: int


def master_port(workload_id: int) -> int:
    """A port that stays the same for a workload across restarts (pods of two workloads
    on one host differ unless their ids are PORT_SPAN apart)."""
    return BASE_PORT + workload_id % PORT_SPAN


def ranked(pods: Sequence[Pod], group_names: Sequence[str]) -> list[Pod]:
    """The pods by rank: group by group in the workload's order, then by pod index."""
    order = {name: i for i, name in enumerate(group_names)}
    return sorted(pods, key=lambda p: (order.get(p.group, len(order)), p.group, p.pod_index))


def distributed_env(
    *,
    workload_id: int,
    workload_name: str,
    project: str,
    group_names: Sequence[str],
    pods: Sequence[Pod],
    pod: Pod,
    spec_env: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Variables for `pod` of a workload whose placed pods are `pods` (the workload's own
    `spec.env` first, so that Fairway's names win over a spec that sets them)."""
    by_rank = ranked(pods, group_names)
    rank = by_rank.index(pod)
    port = master_port(workload_id)
    peers = [f"{p.host}:{port + i}" for i, p in enumerate(by_rank)]
    local_rank = [p for p in by_rank if p.node_id == pod.node_id].index(pod)
    env = {str(k): str(v) for k, v in (spec_env or {}).items()}
    env.update(
        {
            "FAIRWAY_WORKLOAD": workload_name,
            "FAIRWAY_PROJECT": project,
            "FAIRWAY_GROUP": pod.group,
            "FAIRWAY_GROUP_INDEX": str(list(group_names).index(pod.group))
            if pod.group in group_names
            else "0",
            "FAIRWAY_POD_INDEX": str(pod.pod_index),
            "FAIRWAY_RANK": str(rank),
            "FAIRWAY_WORLD_SIZE": str(len(by_rank)),
            "FAIRWAY_PEERS": ",".join(peers),
            "FAIRWAY_COORDINATOR": peers[0],
            "MASTER_ADDR": by_rank[0].host,
            "MASTER_PORT": str(port),
            "WORLD_SIZE": str(len(by_rank)),
            "RANK": str(rank),
            "LOCAL_RANK": str(local_rank),
        }
    )
    return env
