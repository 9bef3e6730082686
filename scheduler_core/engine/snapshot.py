"""The frozen input of a scheduling cycle: pools, nodes, queues, workloads, usage, `now`.

Everything is identified by string keys (names in the simulator, str(pk) in the live
system). The engine never reads a clock: `ClusterSnapshot.now` is the time of the cycle,
in seconds (simulated seconds from 0, or epoch seconds in the live system).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler_core.engine.resources import UNLIMITED, Resources

POLICY_QUOTA = "quota"
POLICY_FAIRSHARE = "fairshare"
POLICY_PRIORITY = "priority"
POLICIES: tuple[str, ...] = (POLICY_QUOTA, POLICY_FAIRSHARE, POLICY_PRIORITY)
"""Scheduling policies of a pool: Run:ai/KAI quota tree, Determined fair-share, priority."""

PLACEMENT_BINPACK = "binpack"
PLACEMENT_SPREAD = "spread"
PLACEMENTS: tuple[str, ...] = (PLACEMENT_BINPACK, PLACEMENT_SPREAD)

FAIRSHARE_POINT_IN_TIME = "point_in_time"
FAIRSHARE_TIME_BASED = "time_based"
FAIRSHARE_MODES: tuple[str, ...] = (FAIRSHARE_POINT_IN_TIME, FAIRSHARE_TIME_BASED)

NODE_READY = "ready"
NODE_CORDONED = "cordoned"
NODE_DOWN = "down"
NODE_STATES: tuple[str, ...] = (NODE_READY, NODE_CORDONED, NODE_DOWN)
"""Only ready nodes take new pods; pods on down nodes are evicted (reason fault)."""

STATUS_PENDING = "pending"
STATUS_RUNNING = "running"
ACTIVE_STATUSES: tuple[str, ...] = (STATUS_PENDING, STATUS_RUNNING)
"""The statuses a workload in a snapshot can have; finished ones are not in snapshots."""

KIND_TRAINING = "training"
KIND_INTERACTIVE = "interactive"
KIND_INFERENCE = "inference"
KIND_CPU = "cpu"
KINDS: tuple[str, ...] = (KIND_TRAINING, KIND_INTERACTIVE, KIND_INFERENCE, KIND_CPU)
DEFAULT_PRIORITY_BY_KIND: Mapping[str, int] = {
    KIND_TRAINING: 50,
    KIND_INTERACTIVE: 100,
    KIND_INFERENCE: 125,
    KIND_CPU: 50,
}
"""Run:ai/KAI convention, higher is more important."""


DEFAULT_MAX_RECLAIMS_PER_CYCLE = 100
"""Default pacing of reclaim: workloads started by reclaiming, per pool and cycle."""

DEFAULT_MAX_PREEMPTIONS_PER_CYCLE = 100
"""Default pacing of preemption: workloads started by preempting, per pool and cycle."""


def default_preemptible(kind: str, priority: int) -> bool:
    """Training and cpu work is preemptible; priority >= 100 is not (unless stated)."""
    if kind in (KIND_INTERACTIVE, KIND_INFERENCE):
        return False
    return priority < 100


@dataclass(frozen=True, slots=True)
class PoolConfig:
    """A node pool and how it is scheduled.

    policy: "quota" (Run:ai/KAI), "fairshare" or "priority" (Determined).
    placement: "binpack" (fill nodes) or "spread" (balance them).
    preemption: may preemptible workloads be evicted (reclaim, priority preemption).
    consolidation: may preemptible workloads be moved to defragment the pool, trying
    at most `max_consolidation_evaluations` victim sets per cycle.
    consolidation_weighs_lost_work: a move restarts the moved pods; with this on, the
    pods that lose least move first and a move is made only while the work it throws
    away is no more than the GPU-time the job has waited for room (move_is_worth_it).
    Off (KAI's behaviour, FORMAT.md's default): moves cost nothing to the decision.
    reclaim_weighs_lost_work: likewise for reclaim: a queue takes back over-fairshare
    work from others only while what the evicted runs throw away is no more than the
    GPU-time the reclaiming queue has waited for room and not spent on earlier reclaims
    (actions/room_waits.py), times `reclaim_lost_work_ratio` (1: the break-even rule; 0.5:
    a queue waits twice as long as the work it would throw away); the rest it waits for
    (off: KAI's).
    consolidation_within_quota: consolidation moves running pods for a workload that
    would run beyond its project's or department's deserved quota (on GPUs lent while
    their owners do not ask for them, theirs to take back) only when the pods moved run
    beyond their own project's quota too and the move throws away at most 1/30 of the
    GPU-time it has waited (actions.consolidate.BEYOND_QUOTA_MOVE_SHARE); otherwise it
    waits for room to free (off: KAI's behaviour).
    reserve_for_gangs: when the first pending workload of a queue needing several GPUs
    cannot be placed because the free GPUs are scattered over nodes (or, its queue
    within its fairshare, because they are taken), the nodes likeliest to drain that
    hold it are held for it: nothing else starts on them, so they drain as their pods
    finish and it starts without moving anything (Slurm's backfill reservation,
    without known run times; recomputed every cycle, see actions/reserve.py). Off:
    KAI's behaviour.
    max_reclaims_per_cycle / max_preemptions_per_cycle: at most this many pending
    workloads start by reclaiming from other queues / by preempting lower-priority work
    of their own queue per cycle (None = no bound). Paces evictions and keeps a cycle
    short after a big change; the next cycle carries on (a fixed point is unaffected:
    a cycle that hits the bound has decided something).
    min_guaranteed_runtime: seconds a started preemptible workload is safe from eviction.
    max_preemptions_per_workload: a workload evicted this many times by reclaim or
    priority preemption (WorkloadSpec.preemptions) is not evicted or moved again: it
    runs to its end, so that no queue takes the same job back and forth (None: no
    bound, KAI's behaviour). Elastic ones may still shrink to their minimum. Like
    min_guaranteed_runtime it holds in quota pools (Determined's policies evict by
    their own rules).
    preemption_loop_evictions: a workload evicted (reclaim or priority preemption) this
    many times in a row, each time within PREEMPTION_LOOP_SPAN of (re)starting
    (WorkloadSpec.quick_evictions), is in a preemption loop: it is held pending for
    PREEMPTION_LOOP_SPAN after its last eviction, with a reason that says so, instead of
    being started only to be evicted again (None: never held, KAI's behaviour).
    over_quota_weight_from_quota: over-quota is split by quota instead of by weight.
    fairshare_mode: "point_in_time" or "time_based" (decayed historical usage over
    `time_based_window` seconds with `time_based_half_life`, strength `time_based_k`).
    """

    name: str
    policy: str = POLICY_QUOTA
    placement: str = PLACEMENT_BINPACK
    preemption: bool = True
    consolidation: bool = True
    max_consolidation_evaluations: int = 100
    consolidation_weighs_lost_work: bool = False
    consolidation_within_quota: bool = False
    reclaim_weighs_lost_work: bool = False
    reclaim_lost_work_ratio: float = 1.0
    reserve_for_gangs: bool = False
    max_reclaims_per_cycle: int | None = DEFAULT_MAX_RECLAIMS_PER_CYCLE
    max_preemptions_per_cycle: int | None = DEFAULT_MAX_PREEMPTIONS_PER_CYCLE
    min_guaranteed_runtime: float = 0.0
    max_preemptions_per_workload: int | None = None
    preemption_loop_evictions: int | None = None
    over_quota_weight_from_quota: bool = False
    fairshare_mode: str = FAIRSHARE_POINT_IN_TIME
    time_based_window: float = 604800.0
    time_based_half_life: float = 86400.0
    time_based_k: float = 1.0


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: `gpus` whole devices (indexed 0..gpus-1), `cpu` cores and `memory` GiB
    (None = unlimited), `labels` for node selectors, and `state` ready|cordoned|down."""

    name: str
    pool: str
    gpus: int = 0
    cpu: float | None = None
    memory: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    state: str = NODE_READY

    def capacity(self) -> Resources:
        """What the node offers; unstated cpu or memory is unlimited."""
        return Resources(
            float(self.gpus),
            UNLIMITED if self.cpu is None else float(self.cpu),
            UNLIMITED if self.memory is None else float(self.memory),
        )


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A scheduling queue: a department (`parent` None) or a project (`parent` = its
    department). Each has one queue per pool.

    quota: deserved quota per pool. A pool a project omits deserves no GPUs; within a
    stated pool an omitted gpus is 0 and an omitted cpu/memory is `inf` (not governed:
    no quota check on it). A pool a department omits deserves the sum of its projects.
    limit: hard cap per pool (omitted = unlimited).
    rank: higher ranks are served and fair-shared first.
    over_quota_weight: share of the over-quota resources among queues of equal rank.
    creation_order: older queues (smaller) win ties.
    """

    name: str
    parent: str | None = None
    rank: int = 0
    over_quota_weight: float = 1.0
    quota: Mapping[str, Resources] = field(default_factory=dict)
    limit: Mapping[str, Resources] = field(default_factory=dict)
    creation_order: int = 0


@dataclass(frozen=True, slots=True)
class PodGroupSpec:
    """A group of identical pods of a workload: `pods` wanted, at least `min_pods` to
    run (a gang; elastic when min_pods < pods), each asking `request`."""

    name: str = "main"
    pods: int = 1
    min_pods: int = 1
    request: Resources = field(default_factory=Resources)


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """Where one pod runs: its group, node, GPU device indices and the fraction of each
    listed device it uses (1.0 for whole GPUs, e.g. 0.5 for a half-GPU pod)."""

    group: str
    node: str
    devices: tuple[int, ...] = ()
    gpu_fraction: float = 1.0


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """A workload (job) of a project.

    id: stable key; name: display name (defaults to id).
    kind: training|interactive|inference|cpu; priority: higher is more important.
    preemptible: may be evicted by reclaim, preemption and consolidation.
    pools: candidate pools in preference order (empty = every pool, in snapshot order).
    groups: its pod groups; it starts only when every group's min_pods fit together.
    node_selector: labels a node must carry. weight: demand weight (policy fairshare).
    submitted_at / creation_order: queue order among equals (earlier first).
    backoff_limit: restarts allowed after faults or failed runs (None: faults are always
    retried, failed runs transitions.DEFAULT_FAILED_RUN_RESTARTS times).
    restarts: restarts so far. status: pending|running. pods: current placements (in
    group order). pool: the pool it runs in. started_at: when it (re)started.
    started_cycle: the ClusterSnapshot.cycle that (re)started it, which orders runs
    started at the same `now`. pending_since: when it last went back to the queue after
    a run (None: it has waited since submitted_at). room_wait_since: when its queue's
    rules (fair share, quota, limit, priority: reasons.QUEUE_TURN_KINDS) last stopped
    keeping it waiting, so that only room could start it (None: they never did since it
    went back to the queue), or later, once part of its wait for room paid for a
    reclaim (CycleResult.room_wait_since); what it waits before then is not waiting for
    room, or was spent (lost_work.waited_gpu_seconds). preemptions: times reclaim or
    priority preemption evicted it (PoolConfig.max_preemptions_per_workload).
    quick_evictions: evictions in a row that each came within PREEMPTION_LOOP_SPAN of its
    (re)start; an eviction after a longer run counts none (PoolConfig.preemption_loop_evictions).
    """

    id: str
    project: str
    groups: tuple[PodGroupSpec, ...] = (PodGroupSpec(),)
    kind: str = KIND_TRAINING
    priority: int = 50
    preemptible: bool = True
    pools: tuple[str, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    weight: float = 1.0
    submitted_at: float = 0.0
    creation_order: int = 0
    backoff_limit: int | None = None
    restarts: int = 0
    status: str = STATUS_PENDING
    pods: tuple[PodPlacement, ...] = ()
    pool: str | None = None
    started_at: float | None = None
    name: str = ""
    pending_since: float | None = None
    started_cycle: int = 0
    room_wait_since: float | None = None
    preemptions: int = 0
    quick_evictions: int = 0

    @property
    def display_name(self) -> str:
        """The name shown to people."""
        return self.name or self.id

    def max_request(self) -> Resources:
        """Resources of all wanted pods (what the workload asks for)."""
        total = Resources()
        for g in self.groups:
            total = total + g.request.scale(g.pods)
        return total


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """Historical usage of a project queue in a pool: `gpu_seconds` consumed between
    `start` and `end` (the live system stores these as UsageSample rows)."""

    queue: str
    pool: str
    start: float
    end: float
    gpu_seconds: float


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything a cycle needs, frozen: the time `now`, pools, nodes, queues
    (departments and projects), active workloads and historical usage. `plugins` names
    the plugins to enable (None = the default set, see plugins.DEFAULT_PLUGINS).
    `cycle` counts the cycles applied before this one: a simulation's clock stands
    still between the cycles of one step, and a run started in a later cycle is still
    the more recent one (live, `now` always moves and `cycle` stays 0)."""

    now: float
    pools: tuple[PoolConfig, ...]
    nodes: tuple[NodeSpec, ...]
    queues: tuple[QueueSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    usage: tuple[UsageRecord, ...] = ()
    plugins: tuple[str, ...] | None = None
    cycle: int = 0
