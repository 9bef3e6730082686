"""Fairway's scheduling engine: pure Python, no Django.

Snapshot in, decisions out. The live scheduler builds a `ClusterSnapshot` from the
database, calls `run_cycle`, and applies the `CycleResult` in one transaction; the
simulator does the same in simulated time. Shaped like Volcano/KAI: a session over a
frozen snapshot, ordered actions (faults -> allocate -> [Determined pools] ->
consolidate -> reclaim -> preempt -> expand), each changing state only through a
statement that commits or discards as a whole, and plugins (priority, gang,
proportion, minruntime) registered by name.

Layout (policies and actions call the framework's session hooks; the session enables
plugins through the registry in framework/plugin.py and asks them; nothing in the
engine imports the simulation or the cycle except those above them here):
- `simulation.py`: a cluster in simulated time (scenarios, what-if, the benchmark);
- `cycle.py`: run a cycle, apply its result, repeat to a fixed point;
- `policies/`: the actions by name and each policy as a list of them (KAI's default
  order for quota pools, Determined's fairshare and priority policies);
- `actions/`: allocate (with reserve), consolidate, reclaim (with its index), preempt,
  expand, faults;
- `plugins/`: priority, gang, proportion (quotas, fairshare division, queue order),
  minruntime, answering the session's hooks;
- `framework/`: the session and its hooks, the statement, the mutable state;
- `snapshot.py`, `decisions.py`, `resources.py`, `placement.py`, `reasons.py`: the
  input and output types, resource vectors, pod placement and pending-reason wording.

Stable interface (names are kept; additions may come):

Snapshot (frozen dataclasses, string keys everywhere):
- `Resources(gpus, cpu, memory)` floats, `math.inf` = unlimited; `+`, `-`, `scale`,
  `fits_in`, `to_dict`.
- `PoolConfig(name, policy, placement, preemption, consolidation,
  max_consolidation_evaluations, min_guaranteed_runtime, over_quota_weight_from_quota,
  fairshare_mode, time_based_window, time_based_half_life, time_based_k,
  max_reclaims_per_cycle, max_preemptions_per_cycle)`. The last two pace evictions:
  at most that many pending workloads start by reclaim / by preemption per pool and
  cycle (default 100 each, None = no bound); the next cycle carries on.
  `max_preemptions_per_workload` (default None = no bound) protects a workload evicted
  that many times by reclaim or preemption until it ends (WorkloadSpec.preemptions).
  `reserve_for_gangs` (default False) holds the nodes likeliest to drain for the first
  gang of a queue that waits for scattered GPUs (actions/reserve.py).
- `NodeSpec(name, pool, gpus, cpu, memory, labels, state)`; cpu/memory None = unlimited;
  state ready|cordoned|down.
- `QueueSpec(name, parent, rank, over_quota_weight, quota, limit, creation_order)`:
  departments have parent None; quota/limit map pool -> Resources.
- `PodGroupSpec(name, pods, min_pods, request)`, `PodPlacement(group, node, devices,
  gpu_fraction)`.
- `WorkloadSpec(id, project, groups, kind, priority, preemptible, pools, node_selector,
  weight, submitted_at, creation_order, backoff_limit, restarts, status, pods, pool,
  started_at, name)`.
- `UsageRecord(queue, pool, start, end, gpu_seconds)` (time-based fairshare history).
- `ClusterSnapshot(now, pools, nodes, queues, workloads, usage, plugins)`.

Running:
- `run_cycle(snapshot) -> CycleResult`: one cycle. Deterministic: the same snapshot
  gives the same result in any process. `python -m benchmarks.engine_bench` times
  it on synthetic clusters up to 5,000 nodes / 50,000 workloads.
- `apply_result(snapshot, result) -> ClusterSnapshot`: the state after the decisions.
- `run_until_stable(snapshot) -> (snapshot, [CycleResult])`: cycles to a fixed point.

Result:
- `CycleResult(now, decisions, pending, queues)`: `decisions` is a tuple of
  `Allocate(workload, pool, pods)`, `Evict(workload, reason_kind, reason, by)` (kinds
  priority|reclaim|fault|fairshare), `Move(workload, pool, pods, reason)`,
  `Shrink(workload, pods, reason)`, `Expand(workload, pods)`, `Fail(workload, reason)`,
  to apply in order; `pending[workload_id]` is a `PendingInfo(workload, queue,
  reason_kind, reason, queue_position)`; `queues[queue][pool]` is a
  `QueueStatus(queue, pool, deserved, limit, fairshare, allocated, requested)`;
  `room_wait_since[workload_id]`: pending workloads whose wait for room paid for a
  reclaim, and when that wait counts from now on (the caller stores it on the workload).

Simulation (shared by the scenario runner and the benchmark):
- `scheduler_core.engine.simulation.Simulation`: time-stepped state with events
  (submit, finish, fail, delete, set_priority, set_quota, set_weight, node_down,
  node_up), completion by duration, usage accounting for time-based fairshare.
"""

from scheduler_core.engine import plugins as _builtin_plugins  # noqa: F401  (registers them)
from scheduler_core.engine.cycle import apply_result, run_cycle, run_until_stable
from scheduler_core.engine.decisions import (
    EVICT_FAIRSHARE,
    EVICT_FAULT,
    EVICT_PRIORITY,
    EVICT_REASON_KINDS,
    EVICT_RECLAIM,
    Allocate,
    CycleResult,
    Decision,
    Evict,
    Expand,
    Fail,
    Move,
    PendingInfo,
    QueueStatus,
    Shrink,
)
from scheduler_core.engine.framework.plugin import (
    DEFAULT_PLUGINS,
    Plugin,
    register,
    registered_plugins,
)
from scheduler_core.engine.policies import ACTIONS, DEFAULT_ACTIONS
from scheduler_core.engine.resources import RESOURCE_NAMES, UNLIMITED, ZERO, Resources
from scheduler_core.engine.snapshot import (
    DEFAULT_PRIORITY_BY_KIND,
    FAIRSHARE_MODES,
    KINDS,
    NODE_STATES,
    PLACEMENTS,
    POLICIES,
    ClusterSnapshot,
    NodeSpec,
    PodGroupSpec,
    PodPlacement,
    PoolConfig,
    QueueSpec,
    UsageRecord,
    WorkloadSpec,
    default_preemptible,
)

__all__ = [
    "ACTIONS",
    "DEFAULT_ACTIONS",
    "DEFAULT_PLUGINS",
    "DEFAULT_PRIORITY_BY_KIND",
    "EVICT_FAIRSHARE",
    "EVICT_FAULT",
    "EVICT_PRIORITY",
    "EVICT_REASON_KINDS",
    "EVICT_RECLAIM",
    "FAIRSHARE_MODES",
    "KINDS",
    "NODE_STATES",
    "PLACEMENTS",
    "POLICIES",
    "RESOURCE_NAMES",
    "UNLIMITED",
    "ZERO",
    "Allocate",
    "ClusterSnapshot",
    "CycleResult",
    "Decision",
    "Evict",
    "Expand",
    "Fail",
    "Move",
    "NodeSpec",
    "PendingInfo",
    "Plugin",
    "PodGroupSpec",
    "PodPlacement",
    "PoolConfig",
    "QueueSpec",
    "QueueStatus",
    "Resources",
    "Shrink",
    "UsageRecord",
    "WorkloadSpec",
    "apply_result",
    "default_preemptible",
    "register",
    "registered_plugins",
    "run_cycle",
    "run_until_stable",
]
