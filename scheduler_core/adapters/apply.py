"""Engine decisions -> database writes, inside the cycle's transaction.

A decision is applied only if what it was computed from still holds: the workload's
version and status, and every target node's version, must be what the snapshot saw
(checked under select_for_update). Otherwise the decision is dropped and the next cycle
decides again. Dropping an eviction, a move or a shrink also drops later decisions that
would land on the nodes it would have freed, so two pods never share a GPU.

Every applied change writes a SchedulingEvent (published after commit) whose workload
state carries the new status, pods, nodes, reason and queue position. Pending reasons and
queue positions are written only when they change; a `pending_reason` event is recorded
only when the kind of reason changes (not when its figures or the position move), so a
long queue does not flood browsers.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scheduler_core.adapters.snapshot import AllocationRow, LiveSnapshot, WorkloadRow, key_chunks
from scheduler_core.choices import PLACED_STATES, EventType, WorkloadStatus
from scheduler_core.db.bulk_writes import (
    delete_rows,
    insert_rows,
    update_pending_reasons,
    update_rows,
)
from scheduler_core.db.locked_workload import LockedWorkload, lock_workloads
from scheduler_core.engine import (
    EVICT_FAULT,
    Allocate,
    CycleResult,
    Decision,
    Evict,
    Expand,
    Fail,
    Move,
    PodPlacement,
    Shrink,
    transitions,
)
from scheduler_core.engine.preemption_loops import loop_detected, quick_evictions_after
from scheduler_core.engine.reasons import room_wait_starts
from scheduler_core.engine.transitions import Cause
from scheduler_core.live_events.batch import EventBatch
from scheduler_core.live_events.other_side import as_seen_by
from scheduler_core.models import Allocation, Node, Workload
from scheduler_core.models.versioned import bump_version
from scheduler_core.runtime.interface import EndedRun, ExecutionBackend, RunEnd

logger = logging.getLogger(__name__)

WORKLOAD_WRITE_FIELDS = [
    "status", "pending_reason", "pending_reason_kind", "queue_position", "started_at",
    "finished_at", "progress_seconds", "restarts", "version", "updated_at", "pending_since",
    "room_wait_since", "preemptions", "quick_evictions",
]  # fmt: skip


ALLOCATION_FIELDS = (
    "workload", "group", "pod_index", "node", "gpu_devices", "gpu_fraction", "created_at",
)  # fmt: skip


@dataclass(frozen=True)
class RefreshSlice:
    """Which waiting workloads whose reason figures or queue position merely moved get
    them rewritten this cycle: those with a primary key above `after`, at most `limit`
    of them in key order (None: all)."""

    after: int = 0
    limit: int | None = None


@dataclass
class ApplyOutcome:
    """What the apply step did."""

    applied: int = 0
    completed: int = 0  # runs that ended before the cycle
    dropped: int = 0
    dropped_details: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    reasons_written: int = 0
    refresh_resume_after: int | None = None  # the slice stopped short: resume after this key
    run_ends: dict[int, RunEnd] = field(default_factory=dict)  # known ends of new runs
    stopped_runs: set[int] = field(default_factory=set)  # runs this cycle ended early
    running: int = 0
    pending: int = 0
    by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Applier:
    """Applies one CycleResult to the database (call inside transaction.atomic())."""

    def __init__(
        self,
        live: LiveSnapshot,
        result: CycleResult,
        now: datetime,
        backend: ExecutionBackend,
        refresh: RefreshSlice | None = RefreshSlice(),
        ended: Sequence[tuple[EndedRun, WorkloadRow]] = (),
    ) -> None:
        self.live = live
        self.backend = backend
        self.ended = ended
        self.refresh = refresh
        self.result = result
        self.now = now
        self.outcome = ApplyOutcome()
        self.events = EventBatch(now)
        self.instances: dict[int, LockedWorkload] = {}
        self.current: dict[int, tuple[int, str]] = {}
        self.node_current: dict[int, tuple[int, str]] = {}
        self.tainted: set[int] = set()
        self.new_allocations: list[tuple[Any, ...]] = []  # values of ALLOCATION_FIELDS
        self.deleted_allocations: list[int] = []
        self.evented: set[int] = set()
        self.dirty: set[int] = set()
        self.refreshed: list[str] = []

    # --- locking and checks -----------------------------------------------------------

    def _lock(self) -> None:
        """Lock target nodes, then the workloads decided on or re-explained (that order,
        like node_mark_down, so the two never deadlock)."""
        node_names = {p.node for d in self.result.decisions for p in _placements(d)}
        node_ids = sorted(self.live.node_ids[n] for n in node_names if n in self.live.node_ids)
        for chunk in key_chunks(node_ids):
            for pk, version, state in (
                Node.objects.select_for_update(no_key=True).filter(pk__any_of=chunk).order_by("pk")
                .values_list("pk", "version", "state")
            ):  # fmt: skip
                self.node_current[pk] = (version, state)
        ids = {int(d.workload) for d in self.result.decisions}
        ids.update(run.workload_id for run, _ in self.ended)
        explained, self.refreshed = self._changed_pending()
        ids.update(int(pk) for pk in explained)
        ids.update(int(pk) for pk in self.result.room_wait_since)
        for chunk in key_chunks(sorted(ids)):
            for w in lock_workloads(Workload.objects.filter(pk__any_of=chunk)):
                self.instances[w.pk] = w
                self.current[w.pk] = (w.version, w.status)

    def _workload_holds(self, pk: int) -> bool:
        row = self.live.workloads.get(pk)
        return row is not None and self.current.get(pk) == (row.version, row.status)

    def _nodes_hold(self, pods: Iterable[PodPlacement]) -> bool:
        for pod in pods:
            pk = self.live.node_ids.get(pod.node)
            if pk is None or pk in self.tainted:
                return False
            if self.node_current.get(pk, (None, None))[0] != self.live.node_versions[pk]:
                return False
        return True

    def _drop(self, decision: Decision, why: str) -> None:
        self.outcome.dropped += 1
        self.outcome.dropped_details.append(
            {"decision": decision.kind, "workload": decision.workload, "why": why}
        )
        pk = int(decision.workload)
        if isinstance(decision, Evict | Move | Shrink) and pk in self.live.workloads:
            # What it would have freed is not free: nothing may land there this cycle.
            self.tainted.update(a.node_id for a in self.live.workloads[pk].allocations)

    # --- the decisions --------------------------------------------------------------------

    def run(self) -> ApplyOutcome:
        self._lock()
        for run, row in self.ended:
            self._complete(run, row)
        for decision in self.result.decisions:
            pk = int(decision.workload)
            if not self._workload_holds(pk):
                self._drop(decision, "the workload changed during the cycle")
                continue
            if not self._nodes_hold(_placements(decision)):
                self._drop(decision, "a target node changed during the cycle")
                continue
            getattr(self, f"_{decision.kind}")(
                decision, self.instances[pk], self.live.workloads[pk]
            )
            self.outcome.applied += 1
            self.outcome.by_kind[decision.kind] += 1
        self._write_pending()
        self._flush()
        return self.outcome

    def _complete(self, run: EndedRun, row: WorkloadRow) -> None:
        """A run that ended before the cycle: completed, unless it stopped meanwhile (a
        user cancelled it, its node failed: its GPUs are free anyway)."""
        w = self.instances.get(run.workload_id)
        if w is None or w.status != WorkloadStatus.RUNNING or w.started_at != run.started_at:
            return
        self.deleted_allocations.extend(a.pk for a in row.allocations)
        reason = transitions.complete(w, at=run.finished_at, progress=run.progress)
        bump_version(w)  # written in bulk below (models.versioned)
        self.outcome.completed += 1
        self._event(
            EventType.COMPLETED, w, [], pool_id=self._pool_id_of_rows(row.allocations),
            reason=reason,
        )  # fmt: skip

    def _nodes_of(self, pods: Iterable[PodPlacement]) -> list[str]:
        return [p.node for p in pods]

    def _pool_id_of_rows(self, rows: list[AllocationRow]) -> int | None:
        return self.live.node_pools.get(rows[0].node_id) if rows else None

    def _add_pods(self, w: LockedWorkload, pods: Iterable[PodPlacement], used: dict[str, set[int]]):
        for pod in pods:
            taken = used.setdefault(pod.group, set())
            index = 0
            while index in taken:
                index += 1
            taken.add(index)
            self.new_allocations.append(
                (w.pk, pod.group, index, self.live.node_ids[pod.node], list(pod.devices),
                 pod.gpu_fraction, self.now)
            )  # fmt: skip

    def _start_run(self, w: LockedWorkload, row: WorkloadRow, gpus: float, pool: str) -> None:
        """A run on `gpus` GPUs in `pool` starts now: the workload is running, or starting
        where the backend waits for its executor; note when it ends, if the backend knows."""
        pool_id = self.live.pool_ids.get(pool)
        transitions.start(w, status=self.backend.placed_status(pool_id=pool_id), at=self.now)
        end = self.backend.run_started(
            workload_id=w.pk, pool_id=pool_id, spec=row.spec, progress=w.progress_seconds,
            started_at=self.now, gpus=gpus,
        )  # fmt: skip
        if end is not None:
            self.outcome.run_ends[w.pk] = end

    def _stop_run(self, w: LockedWorkload, row: WorkloadRow) -> None:
        """The current run ends early: keep its last checkpoint, free its pods."""
        self.outcome.stopped_runs.add(w.pk)
        w.progress_seconds = self._kept(row)
        self.deleted_allocations.extend(a.pk for a in row.allocations)

    def _kept(self, row: WorkloadRow) -> float:
        """The progress a run stopped now keeps (its last checkpoint)."""
        return transitions.progress_kept(
            spec=row.spec, progress=row.progress_seconds, started_at=row.started_at,
            stopped_at=self.now,
        )  # fmt: skip

    def _allocate(self, d: Allocate, w: LockedWorkload, row: WorkloadRow) -> None:
        self._add_pods(w, d.pods, {})
        gpus = _gpus_of(d.pods)
        self._start_run(w, row, gpus, d.pool)
        w.pending_reason = ""
        w.pending_reason_kind = ""
        w.queue_position = None
        nodes = self._nodes_of(d.pods)
        distinct = sorted(set(nodes))
        self._event(
            EventType.ALLOCATED, w, nodes, pool_id=self.live.pool_ids.get(d.pool),
            node_id=self.live.node_ids[distinct[0]] if len(distinct) == 1 else None,
            reason=f"started {len(nodes)} pod{'s' if len(nodes) != 1 else ''} on "
            f"{', '.join(distinct)} in pool {d.pool}",
            details={"pool": d.pool, "nodes": distinct, "pods": len(nodes), "gpus": gpus},
        )  # fmt: skip

    def _evict(self, d: Evict, w: LockedWorkload, row: WorkloadRow) -> None:
        pool_id = self._pool_id_of_rows(row.allocations)
        ran = None if w.started_at is None else (self.now - w.started_at).total_seconds()
        self.outcome.stopped_runs.add(w.pk)
        self.deleted_allocations.extend(a.pk for a in row.allocations)
        cause = Cause.FAULT if d.reason_kind == EVICT_FAULT else Cause.PREEMPTED
        kept = self._kept(row)
        details: dict[str, Any] = {"kind": d.reason_kind, "by": d.by}
        details["lost_gpu_seconds"] = _lost_gpu_seconds(row, kept, self.now)
        if d.by is not None:
            details["by_project_id"] = self._project_of(d.by_id)
        # Whoever sees the workload sees its reason: the other side only if it is its own.
        shown, _ = as_seen_by(
            {w.project_id}, type=EventType.PREEMPTED, project_id=w.project_id,
            reason=d.reason, details=details,
        )  # fmt: skip
        # (out of restarts it fails, as the engine's Fail decision that follows says)
        transitions.requeue(
            w, cause=cause, why=shown, at=self.now, progress=kept, backoff_limit=w.backoff_limit
        )
        details["restarts"] = w.restarts
        if cause == Cause.PREEMPTED:
            self._count_quick_eviction(w, ran, pool_id)
        self._event(EventType.PREEMPTED, w, [], pool_id=pool_id, reason=d.reason, details=details)

    def _count_quick_eviction(self, w: LockedWorkload, ran: float | None, pool_id: Any) -> None:
        """Count the eviction of `w` after a run of `ran` seconds towards a preemption loop
        (engine.preemption_loops); the one that makes a loop writes its event."""
        loop = loop_detected(w.quick_evictions, ran)
        w.quick_evictions = quick_evictions_after(w.quick_evictions, ran)
        if loop is not None:
            details = {"quick_evictions": w.quick_evictions, "preemptions": w.preemptions}
            self._event(EventType.PREEMPTION_LOOP, w, [], pool_id=pool_id, reason=loop,
                        details=details)  # fmt: skip

    def _project_of(self, workload_id: str | None) -> int | None:
        """Project of the workload an eviction made room for (None when it is unknown)."""
        row = self.live.workloads.get(int(workload_id)) if workload_id else None
        return row.project_id if row is not None else None

    def _move(self, d: Move, w: LockedWorkload, row: WorkloadRow) -> None:
        before = sorted({self.live.node_names[a.node_id] for a in row.allocations})
        self._stop_run(w, row)
        self._add_pods(w, d.pods, {})
        # a moved workload restarts (from its checkpoint, if any)
        self._start_run(w, row, _gpus_of(d.pods), d.pool)
        nodes = self._nodes_of(d.pods)
        after = sorted(set(nodes))
        self._event(
            EventType.MOVED, w, nodes, pool_id=self.live.pool_ids.get(d.pool),
            reason=d.reason or f"moved from {', '.join(before)} to {', '.join(after)}",
            details={"from": before, "to": after, "pool": d.pool,
                     "lost_gpu_seconds": _lost_gpu_seconds(row, w.progress_seconds, self.now)},
        )  # fmt: skip

    def _shrink(self, d: Shrink, w: LockedWorkload, row: WorkloadRow) -> None:
        remaining = list(row.allocations)
        for pod in d.pods:
            for a in remaining:
                if (a.group, self.live.node_names[a.node_id], a.gpu_devices) == (
                    pod.group, pod.node, tuple(pod.devices)
                ):  # fmt: skip
                    remaining.remove(a)
                    self.deleted_allocations.append(a.pk)
                    break
        nodes = [self.live.node_names[a.node_id] for a in remaining]
        details: dict[str, Any] = {"removed": len(d.pods), "pods": len(nodes)}
        if d.by is not None:  # made room for another workload: named as an eviction names it
            details |= {
                "kind": d.reason_kind,
                "by": d.by,
                "by_project_id": self._project_of(d.by_id),
            }
        self._event(
            EventType.SHRUNK, w, nodes, pool_id=self._pool_id_of_rows(row.allocations),
            reason=d.reason or f"gave back {len(d.pods)} pod(s)", details=details,
        )  # fmt: skip
        row.allocations = remaining

    def _expand(self, d: Expand, w: LockedWorkload, row: WorkloadRow) -> None:
        used: dict[str, set[int]] = defaultdict(set)
        for a in row.allocations:
            used[a.group].add(a.pod_index)
        self._add_pods(w, d.pods, used)
        nodes = [self.live.node_names[a.node_id] for a in row.allocations] + self._nodes_of(d.pods)
        self._event(
            EventType.EXPANDED, w, nodes, pool_id=self._pool_id_of_rows(row.allocations),
            reason=f"added {len(d.pods)} pod(s) on {', '.join(sorted({p.node for p in d.pods}))}",
            details={"added": len(d.pods), "pods": len(nodes)},
        )  # fmt: skip

    def _fail(self, d: Fail, w: LockedWorkload, row: WorkloadRow) -> None:
        if w.status in PLACED_STATES:
            self.outcome.stopped_runs.add(w.pk)
            self.deleted_allocations.extend(a.pk for a in row.allocations)
        transitions.fail(w, at=self.now)
        self._event(EventType.FAILED, w, [], reason=d.reason)

    def _event(self, type: str, w: LockedWorkload, nodes: list[str], **kwargs: Any) -> None:
        self.evented.add(w.pk)
        self.dirty.add(w.pk)
        self.events.add(type=type, workload=w, nodes=nodes, **kwargs)

    # --- pending reasons and positions ----------------------------------------------------

    def _changed_pending(self) -> tuple[list[str], list[str]]:
        """Pending workloads whose stored reason or position is out of date, split into
        those that get a new reason kind or a first position (locked, written with an
        event) and those whose numbers or place merely moved (written without locks,
        guarded by their version, and only those in this cycle's refresh slice)."""
        explained, refreshed = [], []
        refresh = self.refresh
        for key, info in self.result.pending.items():
            row = self.live.workloads.get(int(key))
            if row is None:
                continue
            if (row.pending_reason, row.pending_reason_kind, row.queue_position) == (
                info.reason, info.reason_kind, info.queue_position
            ):  # fmt: skip
                continue
            if row.pending_reason_kind != info.reason_kind or row.queue_position is None:
                explained.append(key)
            elif refresh is not None and row.pk > refresh.after:
                refreshed.append(key)
        if refresh is not None and refresh.limit is not None and len(refreshed) > refresh.limit:
            refreshed.sort(key=int)
            del refreshed[refresh.limit :]
            self.outcome.refresh_resume_after = int(refreshed[-1])
        return explained, refreshed

    def _write_pending(self) -> None:
        for key, info in self.result.pending.items():
            pk = int(key)
            w = self.instances.get(pk)
            if w is None or w.status != WorkloadStatus.PENDING:
                continue
            if pk not in self.evented and not self._workload_holds(pk):
                continue  # changed by someone during the cycle: their word wins
            kind_changed = w.pending_reason_kind != info.reason_kind
            if room_wait_starts(w.pending_reason_kind, info.reason_kind):
                w.room_wait_since = self.now
            paid = self.result.room_wait_since.get(key)
            if paid is not None:  # its wait paid for a reclaim: it counts from later on
                since = datetime.fromtimestamp(paid, tz=UTC)
                if w.room_wait_since is None or w.room_wait_since < since:
                    w.room_wait_since = since
            w.pending_reason = info.reason
            w.pending_reason_kind = info.reason_kind
            w.queue_position = info.queue_position
            self.outcome.reasons_written += 1
            self.dirty.add(pk)
            if kind_changed and pk not in self.evented:
                self._event(
                    EventType.PENDING_REASON, w, [], reason=info.reason,
                    details={"kind": info.reason_kind, "queue_position": info.queue_position},
                )  # fmt: skip
        rows = []
        for key in self.refreshed:
            pk = int(key)
            if pk in self.instances:
                continue  # decided on this cycle: written above
            info = self.result.pending[key]
            row = self.live.workloads[pk]
            rows.append((pk, row.version, info.reason, info.reason_kind, info.queue_position))
        self.outcome.reasons_written += update_pending_reasons(rows)

    # --- writing --------------------------------------------------------------------------

    def _flush(self) -> None:
        if self.deleted_allocations:
            for chunk in key_chunks(self.deleted_allocations):
                delete_rows(Allocation, chunk)
        insert_rows(Allocation, ALLOCATION_FIELDS, self.new_allocations)
        touched = [w for pk, w in self.instances.items() if pk in self.evented or pk in self.dirty]
        if touched:
            for w in touched:
                w.updated_at = self.now
            update_rows(touched, WORKLOAD_WRITE_FIELDS, model=Workload)
        self.outcome.events = len(self.events)
        self.events.flush()


def _gpus_of(pods: Iterable[PodPlacement]) -> float:
    return sum(len(p.devices) * p.gpu_fraction for p in pods)


def _lost_gpu_seconds(row: WorkloadRow, kept: float, now: datetime) -> float:
    """GPU-seconds a stopped run threw away: its GPUs times the time it ran beyond the
    progress it keeps (`kept`, its last checkpoint)."""
    if row.started_at is None:
        return 0.0
    ran = max((now - row.started_at).total_seconds(), 0.0)
    lost = max(ran - (kept - row.progress_seconds), 0.0)
    gpus = sum(len(a.gpu_devices) * a.gpu_fraction for a in row.allocations)
    return round(gpus * lost, 3)


def _placements(decision: Decision) -> tuple[PodPlacement, ...]:
    """Pods a decision puts somewhere (none for evictions, shrinks and failures)."""
    if isinstance(decision, Allocate | Move | Expand):
        return decision.pods
    return ()


def apply_decisions(
    live: LiveSnapshot,
    result: CycleResult,
    *,
    now: datetime,
    backend: ExecutionBackend,
    refresh: RefreshSlice | None = RefreshSlice(),
    ended: Sequence[tuple[EndedRun, WorkloadRow]] = (),
) -> ApplyOutcome:
    """Complete the `ended` runs (the backend's, see scheduler_core.runtime; with their
    rows, adapters.runs.without_ended), then apply a
    cycle's decisions, pending reasons and positions (inside a transaction); runs started
    and stopped are reported to `backend`.

    Pending rows whose reason kind is unchanged keep their stored reason text and
    position unless they are in the `refresh` slice (None: none are; the default: all).
    """
    return Applier(live, result, now, backend, refresh, ended).run()
