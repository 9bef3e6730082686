"""Determined's fair-share policy: the pool's GPU slots are divided among active
workloads in proportion to demand x weight (demand = pods x GPUs wanted), never more
than a workload's demand, what one cannot use going to the others; whole slots, rounded
down, leftovers by largest remainder then submission order. Quotas do not apply.
Workloads above their share shrink (elastic) or are evicted (reason fairshare); those
below grow into it. A workload that can never fit in the pool (more GPUs than its ready
nodes have, or a pod that fits none of them) takes no part in the division, so it
cannot starve the others. Zero-GPU workloads are scheduled separately, FIFO."""

from __future__ import annotations

import math

from scheduler_core.engine.actions.common import shrink_pod, try_start
from scheduler_core.engine.decisions import EVICT_FAIRSHARE
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import GroupState, PoolIndex, WorkloadState
from scheduler_core.engine.plugins.proportion.division import ShareClaim, divide
from scheduler_core.engine.policies.common import by_gpu_use, pool_workloads, start_or_explain
from scheduler_core.engine.reasons import never_fits_pool, pod_size
from scheduler_core.engine.resources import EPSILON, format_amount


def submission_order(w: WorkloadState) -> tuple[float, ...]:
    """FIFO: earlier submission, then creation order."""
    return (w.spec.submitted_at, w.spec.creation_order)


def counts_for_share(w: WorkloadState, share: float) -> dict[str, int] | None:
    """Pods per group that `share` GPU slots pay for (the gang minimum first, then extra
    pods group by group), or None when the share does not cover the minimum."""
    if w.min_gpus > share + EPSILON:
        return None
    counts = w.min_counts()
    left = share - w.min_gpus
    for grp in w.groups:
        room = grp.pods - counts[grp.name]
        if grp.gpus <= EPSILON:
            counts[grp.name] = grp.pods
            continue
        more = min(room, math.floor(left / grp.gpus + EPSILON))
        counts[grp.name] += more
        left -= more * grp.gpus
    return counts


def fair_targets(slots: float, workloads: list[WorkloadState]) -> dict[str, dict[str, int]]:
    """Pods per group each workload is entitled to (absent = nothing)."""
    active = sorted(workloads, key=submission_order)
    while True:
        claims = [
            ShareClaim(
                key=w.id,
                deserved=0.0,
                requested=w.max_gpus,
                limit=math.inf,
                rank=0,
                weight=w.max_gpus * max(0.0, w.spec.weight),
                order=i,
            )
            for i, w in enumerate(active)
        ]
        shares = divide(slots, claims)
        targets: dict[str, dict[str, int]] = {}
        starved: list[WorkloadState] = []
        for w in active:
            counts = counts_for_share(w, shares[w.id])
            if counts is None:
                starved.append(w)
            else:
                targets[w.id] = counts
        if not starved:
            return targets
        # the latest-submitted workload that cannot run on its share gives it up
        active.remove(starved[-1])


def pods_that_fit(pool: PoolIndex, grp: GroupState, selector: dict[str, str]) -> float:
    """How many pods of `grp` the ready nodes of `pool` could hold if they were empty
    (math.inf for pods that ask for nothing)."""
    room = 0.0
    for node in pool.nodes:
        if not node.ready or (selector and not node.matches(selector)):
            continue
        fit = math.inf
        if grp.gpus >= 1.0 - EPSILON:
            fit = float(node.gpus // round(grp.gpus))
        elif grp.gpus > EPSILON:
            fit = float(node.gpus * math.floor(1.0 / grp.gpus + EPSILON))
        for need, cap in ((grp.cpu, node.cap_cpu), (grp.memory, node.cap_mem)):
            if need > EPSILON and not math.isinf(cap):
                fit = min(fit, float(math.floor(cap / need + EPSILON)))
        room += fit
    return room


def never_fits(
    pool: PoolIndex,
    w: WorkloadState,
    slots: float,
    rooms: dict[tuple[object, ...], float],
) -> str | None:
    """Why `w` can never run in `pool` as its ready nodes stand, naming numbers, or None
    when it may: its gang minimum needs more GPUs than the `slots` of the pool, or more
    pods of a group than the ready nodes could hold even empty (none at all for a pod
    that fits no node). `rooms` keeps pods_that_fit by pod shape across calls."""
    if w.min_gpus > slots + EPSILON:
        return (
            f"its minimum needs {format_amount(w.min_gpus)} GPUs and the ready nodes of "
            f"the pool have {format_amount(slots)}"
        )
    selector = tuple(sorted(w.selector.items()))
    for grp in w.groups:
        shape = (grp.gpus, grp.cpu, grp.memory, selector)
        room = rooms.get(shape)
        if room is None:
            room = rooms[shape] = pods_that_fit(pool, grp, w.selector)
        if room >= grp.min_pods:
            continue
        size = pod_size(grp.gpus, grp.cpu, grp.memory)
        matching = ""
        if selector:
            matching = " matching " + ", ".join(f"{k}={v}" for k, v in selector)
        if room == 0:
            return f"a pod of {size} fits no ready node{matching}"
        return (
            f"it needs {grp.min_pods} pods of {size} at once and the ready nodes{matching} "
            f"hold at most {format_amount(room)}"
        )
    return None


def schedule_fairshare_pool(session: Session, pool: PoolIndex) -> None:
    """Run Determined's fair-share policy on one pool: pending GPU workloads that can
    never fit in it take no part in the division (they would starve the others); the
    rest are divided the pool's ready GPU slots; then zero-GPU workloads start FIFO."""
    gpu_work, zero_work = by_gpu_use(pool_workloads(session, pool))
    slots = float(sum(n.gpus for n in pool.nodes if n.ready))
    verdicts: dict[int, str | None] = {}  # never_fits by kind of workload
    rooms: dict[tuple[object, ...], float] = {}
    dividing = []
    for w in gpu_work:
        if not w.pods:
            if w.kind_key not in verdicts:
                verdicts[w.kind_key] = never_fits(pool, w, slots, rooms)
            why = verdicts[w.kind_key]
            if why is not None:
                session.set_reason(w, pool.name, "capacity", never_fits_pool(pool.name, why))
                continue
        dividing.append(w)
    targets = fair_targets(slots, dividing)
    ordered = sorted(dividing, key=submission_order)
    for w in ordered:
        if not w.pods:
            continue
        target = targets.get(w.id)
        total = sum(target.values()) if target else 0
        if target is not None and len(w.pods) <= total:
            continue
        stmt = session.statement()
        if target is not None:
            while len(w.pods) > total:
                pod = shrink_pod(w)
                if pod is None:
                    break
                stmt.unbind(w, pod)
            stmt.note_reason(w, f"fair share of pool {pool.name} is {total} pods")
        elif w.preemptible:
            stmt.evict(
                w,
                EVICT_FAIRSHARE,
                f"its fair share of pool {pool.name} no longer covers its minimum",
                None,
            )
        stmt.commit()
    for w in ordered:
        target = targets.get(w.id)
        if target is None:
            if not w.pods:
                session.set_reason(
                    w,
                    pool.name,
                    "fairshare",
                    f"its fair share of the {format_amount(slots)} GPU slots of pool "
                    f"{pool.name} does not cover its minimum of {format_amount(w.min_gpus)}",
                )
            continue
        if not w.pods and not start_or_explain(session, pool, w):
            continue
        stmt = session.statement()
        current = w.pod_counts()
        for grp in w.groups:
            for _ in range(target[grp.name] - current[grp.name]):
                if not try_start(session, stmt, w, pool, {grp.name: 1}):
                    break
        stmt.commit()
    for w in sorted(zero_work, key=submission_order):
        if not w.pods:
            start_or_explain(session, pool, w)
