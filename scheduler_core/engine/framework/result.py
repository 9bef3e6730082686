"""Turning a session's final state into the cycle's result: the decisions that lead
from the snapshot to it, why each pending workload waits, and the queue figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.decisions import (
    EVICT_FAULT,
    Allocate,
    CycleResult,
    Decision,
    Evict,
    Expand,
    Fail,
    Move,
    PendingInfo,
    Shrink,
)
from scheduler_core.engine.framework.state import priority_order
from scheduler_core.engine.reasons import below_pods, held_for_it

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState
    from scheduler_core.engine.snapshot import PodPlacement


def build_result(session: Session) -> CycleResult:
    """The decisions that turn the snapshot into the session's state (what frees
    resources first, then what takes them), plus the pending reasons and queue figures."""
    freeing: list[Decision] = []
    taking: list[Decision] = []
    for w in session.workloads.values():
        _decide(w, freeing, taking)
    decisions = tuple(freeing + taking)
    _note_holds(session)
    return CycleResult(
        now=session.now,
        decisions=decisions,
        pending=_pending_infos(session),
        queues=session.queue_statuses(),
        idle_gpus=sum(n.free_whole for n in session.nodes.values() if n.ready),
        not_growing=_not_growing(session),
        room_wait_since={
            wid: since
            for wid, since in session.room_wait_paid.items()
            if not session.workloads[wid].pods and not session.workloads[wid].failed
        },
        more_alike=session.more_alike(),
    )


def _decide(w: WorkloadState, freeing: list[Decision], taking: list[Decision]) -> None:
    """The decisions that take `w` from its pods in the snapshot to its pods now."""
    initial = w.initial_pods
    final = tuple(w.pods)
    if w.failed:
        if initial:
            freeing.append(Evict(w.id, w.evict_kind or EVICT_FAULT, w.evict_reason, None))
        freeing.append(Fail(w.id, w.fail_reason))
        return
    if initial and (w.evicted or not final):
        by = w.evict_by
        freeing.append(
            Evict(
                w.id, w.evict_kind, w.evict_reason, by.name if by else None, by.id if by else None
            )
        )
    if not initial or w.evicted or not final:
        if final:
            assert w.pool is not None
            taking.append(Allocate(w.id, w.pool, final))
        return
    if initial == final:
        return
    if w.moved:
        assert w.pool is not None
        freeing.append(Move(w.id, w.pool, final, "consolidation"))
        return
    _resize(w, initial, final, freeing, taking)


def _resize(
    w: WorkloadState,
    initial: tuple[PodPlacement, ...],
    final: tuple[PodPlacement, ...],
    freeing: list[Decision],
    taking: list[Decision],
) -> None:
    """An elastic workload that kept running: the pods it gave up, the pods it gained."""
    removed = list(initial)
    added: list[PodPlacement] = []
    for pod in final:
        if pod in removed:
            removed.remove(pod)
        else:
            added.append(pod)
    if removed:
        by = w.evict_by
        freeing.append(
            Shrink(
                w.id,
                tuple(removed),
                w.evict_reason,
                reason_kind=w.evict_kind,
                by=by.name if by else None,
                by_id=by.id if by else None,
            )
        )
    if added:
        taking.append(Expand(w.id, tuple(added)))


def _note_holds(session: Session) -> None:
    """Add to why each gang that nodes are held for (reserve_for_gangs) still waits
    which nodes those are."""
    for pool in session.pools.values():
        held: dict[str, tuple[WorkloadState, list[str]]] = {}
        for name, owner in pool.reserved.items():
            if not owner.pods:
                held.setdefault(owner.id, (owner, []))[1].append(name)
        for owner, names in held.values():
            current = session.reasons.get(owner.id, {}).get(pool.name)
            if current is not None:
                text = f"{current[1]}; {held_for_it(names)}"
                session.set_reason(owner, pool.name, current[0], text)


def _not_growing(session: Session) -> dict[str, tuple[str, str]]:
    """Why each running elastic workload still below its wanted pods did not grow, as
    far as an action recorded it (reclaim and preempt do)."""
    found: dict[str, tuple[str, str]] = {}
    workloads = session.workloads
    for wid, per_pool in session.reasons.items():
        w = workloads[wid]
        # running since the cycle began: a reason from before it started would be stale
        if w.pool is not None and w.initial_pods and w.pods and w.missing_pods() > 0:
            reason = per_pool.get(w.pool)
            if reason is not None:
                found[wid] = (reason[0], below_pods(w, reason[1]))
    return found


def _pending_infos(session: Session) -> dict[str, PendingInfo]:
    """Why each pending workload waits, and its position in its project queue."""
    by_project: dict[str, list[WorkloadState]] = {}
    for w in session.waiting_workloads():
        by_project.setdefault(w.project, []).append(w)
    infos: dict[str, PendingInfo] = {}
    for project, items in by_project.items():
        items.sort(key=priority_order)
        for pos, w in enumerate(items, start=1):
            per_pool = session.reason_of(w)
            if not per_pool:
                kind, text = "capacity", "waiting for the next scheduling cycle"
            elif len(per_pool) == 1:
                ((kind, text),) = per_pool.values()
            else:
                kind = next(iter(per_pool.values()))[0]
                text = "; ".join(f"pool {p}: {m}" for p, (_, m) in per_pool.items())
            infos[w.id] = PendingInfo(w.id, project, kind, text, pos)
    return infos
