"""Pieces the Determined policies share: which workloads a pool sees, GPU and zero-GPU
workloads apart, and starting a gang or saying why it cannot start."""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.engine.actions.common import try_start
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.framework.statement import Statement
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


def by_gpu_use(workloads: list[WorkloadState]) -> tuple[list[WorkloadState], list[WorkloadState]]:
    """(GPU workloads, zero-GPU workloads): Determined schedules the two apart, so that
    neither waits for nor evicts the other."""
    gpu = [w for w in workloads if uses_gpus(w)]
    zero = [w for w in workloads if not uses_gpus(w)]
    return gpu, zero


def start_or_explain(
    session: Session,
    pool: PoolIndex,
    w: WorkloadState,
    make_room: Callable[[Statement, dict[str, int]], bool] | None = None,
) -> bool:
    """Start the gang of pending `w` in `pool`: in the free capacity, else by
    `make_room` (which frees room and places it within the statement it is given).
    When neither works nothing changes and the reason is recorded (capacity, naming
    numbers). True when it started."""
    counts = session.gang_counts(w)
    stmt = session.statement()
    if try_start(session, stmt, w, pool, counts) or (
        make_room is not None and make_room(stmt, counts)
    ):
        stmt.commit()
        return True
    stmt.discard()
    session.set_reason(w, pool.name, "capacity", describe_misfit(pool, w, counts))
    return False
