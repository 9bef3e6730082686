"""Running cycles: one cycle over a snapshot, applying its decisions, and repeating
until nothing changes (a fixed point)."""

from __future__ import annotations

import dataclasses
import gc

from scheduler_core.engine.decisions import (
    EVICT_FAULT,
    Allocate,
    CycleResult,
    Decision,
    Evict,
    Expand,
    Fail,
    Move,
    Shrink,
)
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.policies import ACTIONS, DEFAULT_ACTIONS
from scheduler_core.engine.preemption_loops import quick_evictions_after
from scheduler_core.engine.snapshot import (
    STATUS_PENDING,
    STATUS_RUNNING,
    ClusterSnapshot,
    PodPlacement,
    WorkloadSpec,
)

__all__ = ["ACTIONS", "DEFAULT_ACTIONS", "apply_result", "run_cycle", "run_until_stable"]


def run_cycle(snapshot: ClusterSnapshot, actions: tuple[str, ...] = DEFAULT_ACTIONS) -> CycleResult:
    """Run one scheduling cycle over `snapshot`: every action once, in order.

    Deterministic: the same snapshot always gives the same result."""
    # a cycle allocates many small objects and frees them by reference counting (see
    # Session.close); the cyclic collector would only rescan them, for about a tenth
    # of the cycle. Process-wide, so it is switched back on only if it was on.
    collecting = gc.isenabled()
    gc.disable()
    session: Session | None = None
    try:
        session = Session(snapshot)
        for name in actions:
            ACTIONS[name](session)
        return session.result()
    finally:
        if session is not None:
            session.close()
        if collecting:
            gc.enable()


def apply_result(snapshot: ClusterSnapshot, result: CycleResult) -> ClusterSnapshot:
    """The snapshot after applying `result`'s decisions (what the live system does in
    one transaction). Failed workloads leave the snapshot; started and moved ones get
    started_at = now (a move restarts the pods: the run since the last start is lost,
    as after an eviction) and started_cycle = the snapshot's cycle; fault evictions
    count a restart, the others a preemption (and a quick eviction, see
    preemption_loops); pending ones whose wait paid for a
    reclaim wait for room from later on (CycleResult.room_wait_since). The snapshot
    returned is the next cycle's."""
    workloads: dict[str, WorkloadSpec] = {w.id: w for w in snapshot.workloads}
    for d in result.decisions:
        w = workloads.get(d.workload)
        if w is None:
            continue
        after = _decided(w, d, snapshot.now, snapshot.cycle)
        if after is None:
            del workloads[w.id]
        else:
            workloads[w.id] = after
    for wid, since in result.room_wait_since.items():
        w = workloads.get(wid)
        if w is not None and not w.pods:
            paid = since if w.room_wait_since is None else max(w.room_wait_since, since)
            workloads[wid] = dataclasses.replace(w, room_wait_since=paid)
    return dataclasses.replace(
        snapshot, workloads=tuple(workloads.values()), cycle=snapshot.cycle + 1
    )


def _decided(w: WorkloadSpec, d: Decision, now: float, cycle: int) -> WorkloadSpec | None:
    """`w` once decision `d` is applied (None: it failed and leaves the snapshot)."""
    if isinstance(d, Allocate):
        return dataclasses.replace(
            w, status=STATUS_RUNNING, pods=d.pods, pool=d.pool, started_at=now, started_cycle=cycle
        )
    if isinstance(d, Evict):
        return _evicted(w, d, now)
    if isinstance(d, Move):
        # its pods restart elsewhere, like the live apply step restarts the run
        return dataclasses.replace(w, pods=d.pods, pool=d.pool, started_at=now, started_cycle=cycle)
    if isinstance(d, Shrink):
        left = list(w.pods)
        for pod in d.pods:
            _remove_pod(left, pod)
        return dataclasses.replace(w, pods=tuple(left))
    if isinstance(d, Expand):
        return dataclasses.replace(w, pods=w.pods + d.pods)
    if isinstance(d, Fail):
        return None
    return w


def _evicted(w: WorkloadSpec, d: Evict, now: float) -> WorkloadSpec:
    """`w` back to pending: a fault counts a restart, any other eviction a preemption
    (and a quick eviction, see preemption_loops)."""
    fault = d.reason_kind == EVICT_FAULT
    ran = None if w.started_at is None else now - w.started_at
    return dataclasses.replace(
        w,
        status=STATUS_PENDING,
        pods=(),
        pool=None,
        started_at=None,
        pending_since=now,
        restarts=w.restarts + (1 if fault else 0),
        preemptions=w.preemptions + (0 if fault else 1),
        quick_evictions=w.quick_evictions
        if fault
        else quick_evictions_after(w.quick_evictions, ran),
    )


def _remove_pod(pods: list[PodPlacement], pod: PodPlacement) -> None:
    """Remove `pod`; a snapshot pod given without devices matches by group and node."""
    if pod in pods:
        pods.remove(pod)
        return
    for i, p in enumerate(pods):
        if p.group == pod.group and p.node == pod.node and not p.devices:
            del pods[i]
            return
    raise ValueError(f"pod {pod} is not running")


MAX_CYCLES = 50


def run_until_stable(
    snapshot: ClusterSnapshot, max_cycles: int = MAX_CYCLES
) -> tuple[ClusterSnapshot, list[CycleResult]]:
    """Run cycles (applying each) until one decides nothing or `max_cycles` ran.
    Returns the final snapshot and every cycle's result (the last one has the final
    pending reasons and queue figures)."""
    results: list[CycleResult] = []
    for _ in range(max_cycles):
        result = run_cycle(snapshot)
        results.append(result)
        if not result.changed:
            break
        snapshot = apply_result(snapshot, result)
    return snapshot, results
