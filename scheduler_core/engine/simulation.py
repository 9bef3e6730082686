"""A cluster in simulated time: events, completions by duration, scheduling to a fixed
point, usage accounting. Shared by the scenario runner and the benchmark replay.

A preempted or moved workload restarts: its run so far is lost (the time it needs is
counted again from its new start), and its event says how many GPU-seconds were lost."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.engine.cycle import MAX_CYCLES, apply_result, run_cycle
from scheduler_core.engine.decisions import (
    Allocate,
    CycleResult,
    Evict,
    Expand,
    Fail,
    Move,
    Shrink,
)
from scheduler_core.engine.lost_work import lost_gpu_seconds
from scheduler_core.engine.reasons import room_wait_starts
from scheduler_core.engine.resources import Resources
from scheduler_core.engine.snapshot import (
    FAIRSHARE_TIME_BASED,
    NODE_DOWN,
    NODE_READY,
    STATUS_PENDING,
    STATUS_RUNNING,
    ClusterSnapshot,
    NodeSpec,
    PoolConfig,
    QueueSpec,
    UsageRecord,
    WorkloadSpec,
)
from scheduler_core.engine.transitions import Cause, requeue_outcome

COMPLETED = "completed"
FAILED = "failed"
DELETED = "deleted"


@dataclass(slots=True)
class SimEvent:
    """Something that happened to a workload: submitted, allocated, preempted, moved,
    shrunk, expanded, run_failed (its pods crashed; it runs again), completed, failed or
    deleted."""

    at: float
    type: str
    workload: str
    reason: str = ""
    lost_gpu_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (reason only when there is one; lost_gpu_seconds on preemptions and
        moves: the work the stopped run threw away)."""
        out: dict[str, Any] = {"at": self.at, "type": self.type, "workload": self.workload}
        if self.reason:
            out["reason"] = self.reason
        if self.lost_gpu_seconds is not None:
            out["lost_gpu_seconds"] = round(self.lost_gpu_seconds, 3)
        return out


@dataclass(slots=True)
class Simulation:
    """Simulated cluster state. Workloads are keyed by id; `durations` says how long a
    workload runs once (re)started (None = until finished by an event)."""

    pools: tuple[PoolConfig, ...]
    nodes: dict[str, NodeSpec]
    queues: dict[str, QueueSpec]
    active: dict[str, WorkloadSpec] = field(default_factory=dict)
    durations: dict[str, float | None] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    now: float = 0.0
    usage: list[UsageRecord] = field(default_factory=list)
    track_usage: bool = False
    events: list[SimEvent] = field(default_factory=list)
    last_result: CycleResult | None = None
    cycles: int = 0
    _creation: int = 0
    _usage_from: float = 0.0
    # the reason kind of each workload pending after the last cycle
    _reason_kinds: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.track_usage = self.track_usage or any(
            p.fairshare_mode == FAIRSHARE_TIME_BASED for p in self.pools
        )
        self._creation = max((w.creation_order for w in self.active.values()), default=-1) + 1

    # ------------------------------------------------------------ snapshot
    def snapshot(self) -> ClusterSnapshot:
        """The engine's view of the cluster now."""
        return ClusterSnapshot(
            now=self.now,
            pools=self.pools,
            nodes=tuple(self.nodes.values()),
            queues=tuple(self.queues.values()),
            workloads=tuple(self.active.values()),
            usage=tuple(self.usage),
            cycle=self.cycles,
        )

    # ------------------------------------------------------------ time
    def advance(self, to: float) -> None:
        """Move the clock to `to`, completing workloads whose duration elapsed (each at
        its own completion time)."""
        while True:
            due = [
                (w.started_at + d, w.creation_order, w.id)
                for w in self.active.values()
                if w.status == STATUS_RUNNING
                and w.started_at is not None
                and (d := self.durations.get(w.id)) is not None
                and w.started_at + d <= to + 1e-9
            ]
            if not due:
                break
            at, _, wid = min(due)
            self._account_usage(max(at, self.now))
            self.now = max(at, self.now)
            self._finish(wid, COMPLETED, "duration elapsed")
        self._account_usage(to)
        self.now = max(self.now, to)

    def _account_usage(self, until: float) -> None:
        if not self.track_usage:
            self._usage_from = until
            return
        start = self._usage_from
        if until <= start:
            return
        per_queue: dict[tuple[str, str], float] = {}
        for w in self.active.values():
            if w.status != STATUS_RUNNING or w.pool is None:
                continue
            gpus = 0.0
            for pod in w.pods:
                for g in w.groups:
                    if g.name == pod.group:
                        gpus += g.request.gpus
            key = (w.project, w.pool)
            per_queue[key] = per_queue.get(key, 0.0) + gpus
        for (queue, pool), gpus in per_queue.items():
            if gpus > 0:
                self.usage.append(UsageRecord(queue, pool, start, until, gpus * (until - start)))
        self._usage_from = until
        self._forget_usage_before(until - self._usage_window())

    def _usage_window(self) -> float:
        return max(
            (p.time_based_window for p in self.pools if p.fairshare_mode == FAIRSHARE_TIME_BASED),
            default=float("inf"),
        )

    def _forget_usage_before(self, cutoff: float) -> None:
        """Drop records that ended before every pool's window (they are in time order): no
        cycle reads them again, the clock only moving forward, so a long run keeps a
        bounded history."""
        stale = 0
        while stale < len(self.usage) and self.usage[stale].end < cutoff:
            stale += 1
        del self.usage[:stale]

    def _finish(self, wid: str, status: str, reason: str) -> None:
        self.active.pop(wid, None)
        self.status[wid] = status
        kind = {COMPLETED: "completed", FAILED: "failed", DELETED: "deleted"}[status]
        self.events.append(SimEvent(self.now, kind, wid, reason))

    # ------------------------------------------------------------ events
    def next_creation_order(self) -> int:
        """Creation order for a workload created now (file order, then event order)."""
        order = self._creation
        self._creation += 1
        return order

    def submit(self, spec: WorkloadSpec, duration: float | None) -> None:
        """A new pending workload."""
        self.active[spec.id] = spec
        self.durations[spec.id] = duration
        self.status[spec.id] = STATUS_PENDING
        self.events.append(SimEvent(self.now, "submitted", spec.id))

    def finish(self, wid: str) -> None:
        """The workload completes successfully."""
        if wid in self.active:
            self._finish(wid, COMPLETED, "finished")

    def delete(self, wid: str) -> None:
        """The user deletes the workload."""
        if wid in self.active:
            self._finish(wid, DELETED, "deleted by its user")

    def crash(self, wid: str) -> None:
        """Its pods crash: a restart if its restarts allow (engine.transitions), else it
        fails. A crash is the command's failure: neither a preemption nor lost work."""
        w = self.active.get(wid)
        if w is None:
            return
        outcome = requeue_outcome(
            cause=Cause.FAILED_RUN, restarts=w.restarts, preemptions=0,
            backoff_limit=w.backoff_limit,
        )  # fmt: skip
        if not outcome.requeued:
            self._finish(wid, FAILED, "its pods crashed")
            return
        self.active[wid] = dataclasses.replace(
            w,
            status=STATUS_PENDING,
            pods=(),
            pool=None,
            started_at=None,
            restarts=outcome.restarts,
            pending_since=self.now,
        )
        self.status[wid] = STATUS_PENDING
        self.events.append(SimEvent(self.now, "run_failed", wid, "its pods crashed; restarting"))

    def set_workload(self, wid: str, **changes: Any) -> None:
        """Change fields of an active workload (priority, weight)."""
        w = self.active.get(wid)
        if w is not None:
            self.active[wid] = dataclasses.replace(w, **changes)

    def set_queue(self, name: str, **changes: Any) -> None:
        """Change fields of a queue (over_quota_weight, quota, limit)."""
        self.queues[name] = dataclasses.replace(self.queues[name], **changes)

    def set_quota(self, name: str, pool: str, amounts: Mapping[str, float]) -> None:
        """Change a queue's deserved quota in one pool (unstated resources keep theirs)."""
        q = self.queues[name]
        current = q.quota.get(pool)
        base = current.to_dict(finite_only=False) if current else {}
        base.update({k: float(v) for k, v in amounts.items()})
        quota = dict(q.quota)
        quota[pool] = Resources(
            base.get("gpus", 0.0), base.get("cpu", float("inf")), base.get("memory", float("inf"))
        )
        self.set_queue(name, quota=quota)

    def set_node_state(self, name: str, up: bool) -> None:
        """node_up / node_down."""
        node = self.nodes[name]
        self.nodes[name] = dataclasses.replace(node, state=NODE_READY if up else NODE_DOWN)

    # ------------------------------------------------------------ scheduling
    def schedule(self, max_cycles: int = MAX_CYCLES) -> CycleResult:
        """Run cycles until nothing changes, applying each and recording events."""
        snapshot, result = self._run_cycle()
        for _ in range(max_cycles):
            if not result.changed:
                break
            self._apply(snapshot, result)
            snapshot, result = self._run_cycle()
        self._note_reasons(result)
        self.last_result = result
        return result

    def cycle_once(self) -> CycleResult:
        """Run exactly one cycle and apply it (a periodic scheduler's tick)."""
        snapshot, result = self._run_cycle()
        if result.changed:
            self._apply(snapshot, result)
        else:
            self._note_reasons(result)
        self.last_result = result
        return result

    def _run_cycle(self) -> tuple[ClusterSnapshot, CycleResult]:
        snapshot = self.snapshot()
        self.cycles += 1
        return snapshot, run_cycle(snapshot)

    def _apply(self, snapshot: ClusterSnapshot, result: CycleResult) -> None:
        """Apply `result` to the `snapshot` it was decided on (runs it started get that
        snapshot's cycle)."""
        self._record(result)
        snap = apply_result(snapshot, result)
        self.active = {w.id: w for w in snap.workloads}
        self._note_reasons(result)
        for d in result.decisions:
            if isinstance(d, Fail):
                self.status[d.workload] = FAILED
        for d in result.decisions:
            w = self.active.get(d.workload)
            if w is not None:
                self.status[w.id] = w.status

    def _note_reasons(self, result: CycleResult) -> None:
        """Note, on the workloads still pending, when their queue's rules stopped keeping
        them waiting (WorkloadSpec.room_wait_since), as the live apply step does."""
        before = self._reason_kinds
        self._reason_kinds = {}
        for wid, info in result.pending.items():
            self._reason_kinds[wid] = info.reason_kind
            if room_wait_starts(before.get(wid), info.reason_kind):
                w = self.active.get(wid)
                if w is not None and not w.pods:
                    self.active[wid] = dataclasses.replace(w, room_wait_since=self.now)

    def _record(self, result: CycleResult) -> None:
        for d in result.decisions:
            if isinstance(d, Allocate):
                self.events.append(SimEvent(self.now, "allocated", d.workload))
            elif isinstance(d, Evict):
                lost = self._lost(d.workload)
                self.events.append(SimEvent(self.now, "preempted", d.workload, d.reason, lost))
            elif isinstance(d, Move):
                lost = self._lost(d.workload)
                self.events.append(SimEvent(self.now, "moved", d.workload, d.reason, lost))
            elif isinstance(d, Shrink):
                self.events.append(SimEvent(self.now, "shrunk", d.workload, d.reason))
            elif isinstance(d, Expand):
                self.events.append(SimEvent(self.now, "expanded", d.workload))
            elif isinstance(d, Fail):
                self.active.pop(d.workload, None)
                self.events.append(SimEvent(self.now, "failed", d.workload, d.reason))

    def _lost(self, wid: str) -> float:
        """GPU-seconds stopping the workload's run now throws away (before the cycle's
        decisions apply: its pods are still those of the run)."""
        w = self.active.get(wid)
        return 0.0 if w is None else lost_gpu_seconds(w, self.now)

    def take_events(self) -> list[SimEvent]:
        """Events since the last call."""
        out, self.events = self.events, []
        return out
