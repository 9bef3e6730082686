"""Determined's fair-share policy: the pool's GPU slots are divided among active
workloads in proportion to demand x weight (demand = pods x GPUs wanted), never more
than a workload's demand, what one cannot use going to the others; whole slots, rounded
down, leftovers by largest remainder then submission order. Quotas do not apply.
Workloads above their share shrink (elastic) or are evicted (reason fairshare); those
below grow into it. Zero-GPU workloads are scheduled separately, FIFO."""

from __future__ import annotations

import math

from scheduler_core.engine.actions.common import shrink_pod, try_start
from scheduler_core.engine.decisions import EVICT_FAIRSHARE
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.plugins.proportion.division import ShareClaim, divide
from scheduler_core.engine.policies.common import pool_workloads, uses_gpus, zero_gpu_pass
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


def schedule_fairshare_pool(session: Session, pool: PoolIndex) -> None:
    """Run Determined's fair-share policy on one pool."""
    workloads = pool_workloads(session, pool)
    gpu_work = [w for w in workloads if uses_gpus(w)]
    slots = float(sum(n.gpus for n in pool.nodes if n.ready))
    targets = fair_targets(slots, gpu_work)
    ordered = sorted(gpu_work, key=submission_order)
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
        stmt = session.statement()
        if not w.pods:
            counts = w.min_counts()
            if not try_start(session, stmt, w, pool, counts):
                stmt.discard()
                session.set_reason(w, pool.name, "capacity", describe_misfit(pool, w, counts))
                continue
        current = w.pod_counts()
        for grp in w.groups:
            for _ in range(target[grp.name] - current[grp.name]):
                if not try_start(session, stmt, w, pool, {grp.name: 1}):
                    break
        stmt.commit()
    zero_gpu_pass(session, pool, workloads, submission_order)
