"""Allocate: start pending workloads in free capacity, queue by queue in fairshare
order, gangs all-or-nothing, limits and the in-quota rule of non-preemptible work
respected. Candidate pools are tried in each workload's order of preference."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import (
    in_queue_order,
    quota_pools,
    try_start,
)
from scheduler_core.engine.actions.reserve import held_reason, reserve
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.placement import describe_misfit


def allocate(session: Session) -> None:
    """Place what fits without disturbing anything that runs."""
    pools = quota_pools(session)
    if not pools:
        return
    reserve(session)
    pending = session.pending_workloads()
    depth = max((len(session.candidate_pools(w)) for w in pending), default=0)
    for level in range(depth):
        if level:  # with those let in behind alike workloads that started
            pending = session.pending_workloads()
        candidates = {w.id: session.candidate_pools(w) for w in pending}
        for pool in pools:
            jobs = [
                w
                for w in pending
                if not w.pods
                and len(candidates[w.id]) > level
                and candidates[w.id][level] == pool.name
            ]
            if jobs:
                in_queue_order(
                    session,
                    pool.name,
                    jobs,
                    partial(_attempt, session, pool),
                    viable=partial(_may_fit, session, pool),
                    skip=partial(_explain, session, pool),
                )


def _may_fit(session: Session, pool: PoolIndex, w: WorkloadState) -> bool:
    """Could the gang of `w` fit the free capacity at all? (Free capacity only shrinks
    during allocate, so a False stays False.)"""
    return session.alike(("fits", pool.name, w.kind_key), partial(_fits, session, pool, w))


def _fits(session: Session, pool: PoolIndex, w: WorkloadState) -> bool:
    counts = session.gang_counts(w)
    need = 0.0
    widest = 0
    for grp in w.groups:
        k = counts.get(grp.name, 0)
        if k:
            need += grp.gpus * k
            if grp.gpus >= 1.0:
                widest = max(widest, round(grp.gpus))
    if need > pool.free_gpus + 1e-9:
        return False
    return widest <= pool.largest_free_whole()


def _explain(session: Session, pool: PoolIndex, w: WorkloadState) -> None:
    """Record why `w`, which cannot fit the free capacity (see _may_fit), waits: the
    same reason _attempt would give, without trying to place it."""
    if w.pods or w.failed:
        return
    reason = session.alike(("misfit", pool.name, w.kind_key), partial(_misfit, session, pool, w))
    session.set_reason(w, pool.name, *reason)


def _misfit(session: Session, pool: PoolIndex, w: WorkloadState) -> tuple[str, str]:
    problem = session.admission_problem(w, pool.name, session.gang_request(w))
    if problem is not None:
        return problem
    return ("capacity", describe_misfit(pool, w, session.gang_counts(w)))


def _attempt(session: Session, pool: PoolIndex, w: WorkloadState) -> None:
    """Start `w` if it fits, or say why not. While nothing commits, a workload alike to
    one that could not start (same kind, and the same view of held nodes: see
    reserve.py) cannot either, for the same reason: it gets that reason without a try."""
    if w.pods or w.failed:
        return
    key = ("could not start", pool.name, w.kind_key, pool.hold_key(w))
    reason = session.known_alike(key)
    if reason is None:
        reason = _try_start(session, pool, w)
        if reason is None:
            return  # started
        session.note_alike(key, reason)
    session.set_reason(w, pool.name, *reason)


def _try_start(session: Session, pool: PoolIndex, w: WorkloadState) -> tuple[str, str] | None:
    """Start `w` in `pool` (None), or (kind, reason) why it cannot start."""
    counts = session.gang_counts(w)
    problem = session.admission_problem(w, pool.name, session.gang_request(w))
    if problem is not None:
        return problem
    stmt = session.statement()
    if try_start(session, stmt, w, pool, counts):
        stmt.commit()
        return None
    stmt.discard()
    held = held_reason(session, pool, w, counts)
    if held is not None:
        return ("capacity", held)
    return ("capacity", describe_misfit(pool, w, counts))
