"""Pieces the Determined policies share: which workloads a pool sees, and the FIFO
pass for zero-GPU workloads."""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.engine.actions.common import try_start
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.placement import describe_misfit
from scheduler_core.engine.resources import EPSILON


def pool_workloads(session: Session, pool: PoolIndex) -> list[WorkloadState]:
    """Workloads running in `pool` and pending ones that may run there."""
    out = []
    for w in session.workloads.values():
        if w.failed:
            continue
        if w.pods:
            if w.pool == pool.name:
                out.append(w)
        elif pool.name in session.candidate_pools(w):
            out.append(w)
    return out


def uses_gpus(w: WorkloadState) -> bool:
    """True for workloads that ask for GPUs (slots)."""
    return w.max_gpus > EPSILON


def zero_gpu_pass(
    session: Session,
    pool: PoolIndex,
    workloads: list[WorkloadState],
    order: Callable[[WorkloadState], tuple[float, ...]],
) -> None:
    """Start pending zero-GPU workloads in `order` wherever they fit."""
    for w in sorted((w for w in workloads if not uses_gpus(w)), key=order):
        if w.pods:
            continue
        counts = session.gang_counts(w)
        stmt = session.statement()
        if try_start(session, stmt, w, pool, counts):
            stmt.commit()
        else:
            stmt.discard()
            session.set_reason(w, pool.name, "capacity", describe_misfit(pool, w, counts))
