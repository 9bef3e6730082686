"""The executor protocol: what a backend that runs pods implements (docs/executors.md).

Three required methods, as in KAI's binder and Kueue's job framework, plus optional
capabilities an executor declares:

- `start(launches)`: start these pods (one `Launch` per workload, its pods started in
  this pass, each pod a run already recorded as `starting`).
- `stop(stops)`: stop these runs (a signal, the pool's grace period, then a kill).
- `observe(runs, now)`: once per runtime tick, with the executor's live runs: what it
  sees of them (state, exit code, devices, external id) and of its nodes. An executor
  that is told of changes (the agent's websocket) may also report at any time through
  `runtime.lifecycle.runs_observed`.

Everything above this seam (the reconcile, the run lifecycle, the workload transitions)
is generic; everything below it (a channel to an agent, `sbatch`, a Kubernetes API) is the
executor's own. Value types only here: no Django, no models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class Capability(StrEnum):
    """What an executor may declare beyond the three required methods."""

    # Runs end on Fairway's clock (the simulator): a placed workload runs at once, its
    # end is predicted from its spec's `duration`, nothing is started or stopped, no
    # run is recorded. Without it a placed workload is `starting` until the executor
    # observes every pod running, and the reconcile records runs and starts them.
    KNOWS_RUN_ENDS = "knows_run_ends"
    # The executor chooses the device indices on each node itself (Slurm GRES without a
    # type per index) and reports them (RunReport.devices): Fairway's chosen indices
    # are advice, and the reconcile does not wait for a device to be released.
    ASSIGNS_DEVICES = "assigns_devices"
    # Its pods' output reaches the log store (the agent's `log` frames; a Slurm job's
    # output files): the console shows a log panel.
    KEEPS_LOGS = "keeps_logs"
    # It gives each pod the ports its spec declares (`Launch.ports`: free ports on the
    # pod's node, in FAIRWAY_PORT_<NAME>) and reports where each listens
    # (RunReport.ports): Fairway's web server proxies them (/proxy/...).
    EXPOSES_PORTS = "exposes_ports"
    # A start may be sent again: the executor answers a start of a run it has with that
    # run's state (a node agent; never a Slurm submission). The reconcile sends a start
    # that nothing was heard of for RUN_START_RESEND_AFTER seconds again, with a new epoch
    # (a frame lost on the way must not leave a workload `starting` forever).
    RESENDS_STARTS = "resends_starts"
    # Pods asking a fraction of a GPU share one device (the node agent's slices, the
    # simulator's accounting). Without it a device is a pod's alone, and a pod asking a
    # fraction is refused at submission where no candidate pool shares (workload_fit).
    SHARES_GPUS = "shares_gpus"


class StopReason(StrEnum):
    """Why Fairway stops a run (the agent protocol's names)."""

    PREEMPT = "preempt"  # the workload runs again later (re-queued, moved, suspended)
    CANCEL = "cancel"  # it will not (cancelled, failed, completed)
    FAILED_PEER = "failed-peer"  # another pod of its workload failed
    LOST = "lost"  # its node was lost: nothing to signal


class RunPhase(StrEnum):
    """What an executor saw of a run (the neutral run states it reports)."""

    STARTING = "starting"  # accepted, not running yet: nothing new
    RUNNING = "running"
    EXITED = "exited"  # its process ended: exit code 0 is success
    START_FAILED = "start_failed"  # it could not start (no such command, image, ...)
    LOST = "lost"  # the executor no longer has it


@dataclass(frozen=True, slots=True)
class PodLaunch:
    """One pod to start: its run (`run_id`, the node's `epoch` for executors that fence
    starts), where (node, devices, fraction of each) and its environment (ranks, peers,
    the workload's own `env`; device variables are the executor's to add)."""

    run_id: int
    epoch: int
    node_id: int
    node_name: str
    group: str
    pod_index: int
    devices: tuple[int, ...]
    gpu_fraction: float
    env: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Launch:
    """What a workload runs (built once for every executor, runtime.launch): its command
    (`argv`, else `shell`), `image`, `workdir`, the pool's `grace_period` for stops, a
    checkpoint key that stays the same across restarts, and the pods started in this
    pass. `gang_size`: how many pods it has placed in all (an executor that starts a
    gang at once, as a Kubernetes scheduling gate or a held Slurm job, waits until it
    has been handed that many). `ports`: the names of the ports each pod serves
    (spec.ports), for an executor with Capability.EXPOSES_PORTS to give out."""

    workload_id: int
    workload_name: str
    project: str
    argv: tuple[str, ...] | None
    shell: str | None
    image: str | None
    workdir: str | None
    grace_period: int
    checkpoint_key: str
    gang_size: int
    pods: tuple[PodLaunch, ...]
    ports: tuple[str, ...] = ()  # names of the ports each pod serves (EXPOSES_PORTS)


@dataclass(frozen=True, slots=True)
class Stop:
    """A run to stop: signal it, wait `grace_period` seconds, then kill it."""

    run_id: int
    node_id: int
    external_id: str
    reason: StopReason
    grace_period: int


@dataclass(frozen=True, slots=True)
class LiveRun:
    """One of the executor's live runs, as Fairway has it (what `observe` is given)."""

    run_id: int
    workload_id: int
    node_id: int
    node_name: str
    group: str
    pod_index: int
    epoch: int
    state: str  # starting | running | stopping
    external_id: str


@dataclass(frozen=True, slots=True)
class PortSeen:
    """Where one of a run's ports listens: `host` ("" for the address of the run's node,
    as its peers reach it) and `port`."""

    name: str
    port: int
    host: str = ""


@dataclass(frozen=True, slots=True)
class RunReport:
    """What an executor saw of one run. `node_id` and `epoch`, when given, must match
    the run (a node reports only its own runs; a report of an epoch above the run's is
    refused).
    `devices`: the indices the executor chose (Capability.ASSIGNS_DEVICES).
    `external_id`: the executor's own id of the run (a Slurm job id, a pod UID).
    `ports`: where its declared ports listen (Capability.EXPOSES_PORTS)."""

    run_id: int
    phase: RunPhase
    at: datetime
    exit_code: int | None = None
    signal: str | None = None
    reason: str | None = None
    devices: tuple[int, ...] | None = None
    external_id: str | None = None
    node_id: int | None = None
    epoch: int | None = None
    ports: tuple[PortSeen, ...] | None = None


@dataclass(frozen=True, slots=True)
class NodeSeen:
    """A node as an executor that discovers its nodes sees it (Slurm's `sinfo`): its
    name, GPUs and whether it takes pods (`ready`), is drained, or is down."""

    name: str
    state: str  # NodeState value: ready | cordoned | down
    gpu_count: int = 0
    gpu_model: str = ""
    cpu: float = 0.0
    memory: float = 0.0
    reason: str = ""
    address: str = ""  # where its pods reach each other (peers, MASTER_ADDR); "": its name


@dataclass
class Observation:
    """What one `observe` saw: reports of runs, and (executors that discover their
    nodes) every node of each of its pools by pool id (None: it does not); and, for the
    tick's report, what the executor did itself (runs it completed, nodes it marked
    down or unreachable)."""

    runs: list[RunReport] = field(default_factory=list)
    nodes: dict[int, list[NodeSeen]] | None = None
    completed: int = 0
    nodes_down: list[str] = field(default_factory=list)
    nodes_unreachable: list[str] = field(default_factory=list)


class Executor(Protocol):
    """Runs the pods of the pools whose `backend` is its `backend`."""

    backend: str
    capabilities: frozenset[Capability]

    def start(self, launches: Sequence[Launch]) -> None:
        """Start these pods (called after the runs' commit). A run handed again (its
        start may have been lost) must not start twice: match it by `run_id`."""
        ...

    def stop(self, stops: Sequence[Stop]) -> None:
        """Stop these runs (after commit). Their end is reported like any other."""
        ...

    def observe(self, runs: Sequence[LiveRun], now: datetime) -> Observation:
        """Once per runtime tick: what the executor sees of its live `runs` (those it
        reports nothing of are unchanged) and of its nodes."""
        ...


class PredictsRunEnds(Protocol):
    """What an executor with Capability.KNOWS_RUN_ENDS adds: when a run ends."""

    def run_end(
        self, *, spec: Mapping[str, Any] | None, progress: float, started_at: datetime
    ) -> datetime | None:
        """When a run that started at `started_at` with `progress` seconds done ends
        (None: not known; it ends when reported)."""
        ...


def has(executor: Any, capability: Capability) -> bool:
    """Whether `executor` declares `capability`."""
    return capability in getattr(executor, "capabilities", frozenset())
