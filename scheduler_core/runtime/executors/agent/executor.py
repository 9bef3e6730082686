"""Node agents as an executor (docs/agent.md): pods run as real processes started by
the agent of their node, which Fairway reaches over its websocket (channel.py). Starts
and stops go out as `start` and `signal` frames; the agents push what happens to their
runs (reports.py, through runtime.lifecycle), so `observe` only checks that they are
still heard from (liveness.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from scheduler_core.choices import Backend
from scheduler_core.runtime.executor import (
    Capability,
    Launch,
    LiveRun,
    Observation,
    PodLaunch,
    Stop,
)
from scheduler_core.runtime.executors.agent import channel
from scheduler_core.runtime.executors.agent.liveness import check_agent_nodes


def start_frame(launch: Launch, pod: PodLaunch) -> dict[str, Any]:
    """The body of one pod's `start` frame (docs/agent.md, "Protocol")."""
    return {
        "run": pod.run_id,
        "epoch": pod.epoch,
        "workload": {"id": launch.workload_id, "name": launch.workload_name,
                     "project": launch.project},
        "argv": list(launch.argv) if launch.argv is not None else None,
        "shell": launch.shell,
        "image": launch.image,
        "env": dict(pod.env),
        "gpus": list(pod.devices),
        "gpu_fraction": pod.gpu_fraction,
        "workdir": launch.workdir,
        "grace_period": launch.grace_period,
        "checkpoint_key": launch.checkpoint_key,
        "ports": list(launch.ports),
    }  # fmt: skip


class AgentExecutor:
    """Pods run on node agents: a placed workload is `starting` until every pod's agent
    says it runs; runs end when agents report it."""

    backend = Backend.AGENT
    capabilities = frozenset(
        {
            Capability.KEEPS_LOGS,
            Capability.EXPOSES_PORTS,
            Capability.RESENDS_STARTS,
            Capability.SHARES_GPUS,
        }
    )

    def start(self, launches: Sequence[Launch]) -> None:
        channel.send_many(
            [(pod.node_id, "start", start_frame(launch, pod)) for launch in launches
             for pod in launch.pods]
        )  # fmt: skip

    def stop(self, stops: Sequence[Stop]) -> None:
        channel.send_many(
            [(stop.node_id, "signal", {"run": stop.run_id, "reason": str(stop.reason),
                                       "grace_period": stop.grace_period}) for stop in stops]
        )  # fmt: skip

    def observe(self, runs: Sequence[LiveRun], now: datetime) -> Observation:
        liveness = check_agent_nodes(now, backend=self.backend)
        return Observation(nodes_down=liveness.down, nodes_unreachable=liveness.unreachable)
