"""The output of a scheduling cycle: typed decisions, pending reasons, queue figures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from scheduler_core.engine.resources import Resources
from scheduler_core.engine.snapshot import PodPlacement

EVICT_PRIORITY = "priority"
EVICT_RECLAIM = "reclaim"
EVICT_FAULT = "fault"
EVICT_FAIRSHARE = "fairshare"
EVICT_REASON_KINDS: tuple[str, ...] = (EVICT_PRIORITY, EVICT_RECLAIM, EVICT_FAULT, EVICT_FAIRSHARE)
"""Why a workload was evicted: a more important workload of the same queue (priority),
another queue taking back its fair share (reclaim), a node failure (fault), or
Determined's fair-share rebalancing (fairshare)."""


@dataclass(frozen=True, slots=True)
class Allocate:
    """Start a pending workload: bind `pods` (node, devices, fraction) in `pool`."""

    workload: str
    pool: str
    pods: tuple[PodPlacement, ...]
    kind: Literal["allocate"] = "allocate"


@dataclass(frozen=True, slots=True)
class Evict:
    """Stop a running workload and re-queue it (pending). `reason_kind` is one of
    EVICT_REASON_KINDS; `reason` is plain language; `by` names the beneficiary and
    `by_id` is its id."""

    workload: str
    reason_kind: str
    reason: str
    by: str | None = None
    by_id: str | None = None
    kind: Literal["evict"] = "evict"


@dataclass(frozen=True, slots=True)
class Move:
    """Relocate a running workload (consolidation): its pods become `pods` in `pool`."""

    workload: str
    pool: str
    pods: tuple[PodPlacement, ...]
    reason: str = ""
    kind: Literal["move"] = "move"


@dataclass(frozen=True, slots=True)
class Shrink:
    """Remove `pods` from a running elastic workload (never below its min_pods). Like
    Evict, `reason_kind`, `by` and `by_id` say why and for which workload, when it gave
    them up to make room for one ("" and None otherwise)."""

    workload: str
    pods: tuple[PodPlacement, ...]
    reason: str = ""
    kind: Literal["shrink"] = "shrink"
    reason_kind: str = ""
    by: str | None = None
    by_id: str | None = None


@dataclass(frozen=True, slots=True)
class Expand:
    """Add `pods` to a running elastic workload."""

    workload: str
    pods: tuple[PodPlacement, ...]
    kind: Literal["expand"] = "expand"


@dataclass(frozen=True, slots=True)
class Fail:
    """Mark a workload failed (e.g. restarts used up its backoff limit)."""

    workload: str
    reason: str
    kind: Literal["fail"] = "fail"


Decision = Allocate | Evict | Move | Shrink | Expand | Fail
"""Any decision of a cycle, in the order it must be applied."""


@dataclass(frozen=True, slots=True)
class PendingInfo:
    """Why a workload still waits after the cycle, in words a researcher understands
    (naming numbers), `reason_kind` for filtering (quota, limit, capacity, gang,
    fairshare, min_runtime, priority, selector, policy), and its 1-based position among
    the pending workloads of its project queue."""

    workload: str
    queue: str
    reason_kind: str
    reason: str
    queue_position: int


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """A queue's figures in one pool after the cycle: deserved quota, limit, fairshare,
    allocated and requested (unlimited amounts are math.inf)."""

    queue: str
    pool: str
    deserved: Resources
    limit: Resources
    fairshare: Resources
    allocated: Resources
    requested: Resources


@dataclass(frozen=True, slots=True)
class CycleResult:
    """The outcome of one cycle: `decisions` to apply in order (atomically), `pending`
    reasons per pending workload id, `queues[queue][pool]` figures, the whole GPUs
    of ready nodes that are still free after the decisions, and `not_growing`: why a
    running elastic workload below its wanted pods did not get its next pod
    (workload id -> (reason_kind, reason)), where an action found out.
    `room_wait_since`: pending workloads whose wait for room paid for a reclaim of this
    cycle (PoolConfig.reclaim_weighs_lost_work), and when their wait counts from now on
    (WorkloadSpec.room_wait_since), so that no later cycle spends it again.
    `more_alike`: the cycle started the last workload it looked at of a kind whose later
    ones it passed over (framework/alike_window.py); a cycle right after looks at them."""

    now: float
    decisions: tuple[Decision, ...]
    pending: Mapping[str, PendingInfo] = field(default_factory=dict)
    queues: Mapping[str, Mapping[str, QueueStatus]] = field(default_factory=dict)
    idle_gpus: int = 0
    not_growing: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    room_wait_since: Mapping[str, float] = field(default_factory=dict)
    more_alike: bool = False

    @property
    def changed(self) -> bool:
        """True when the cycle decided anything (False at a fixed point)."""
        return bool(self.decisions)
