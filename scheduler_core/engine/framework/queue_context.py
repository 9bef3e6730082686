"""What binding a pod of one workload in one pool touches, looked up once."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.engine.framework.state import PoolIndex, WorkloadState

Vec = list[float]
"""A resource vector [gpus, cpu, memory], mutable: allocations are added to in place."""

Key = tuple[str, str]
"""(queue, pool)."""


class QueueContext:
    """What binding a pod of one workload in one pool touches: its (project, pool)
    key, the pool, the allocation vectors of its project and department (and their
    non-preemptible parts for non-preemptible work), and the running-workload maps.
    Cached per workload and pool so that binding does not look these up each time."""

    __slots__ = (
        "all_acc",
        "dept_acc",
        "dept_np",
        "key",
        "pool",
        "project_acc",
        "project_np",
        "running_pool",
        "running_queue",
    )

    def __init__(
        self,
        key: Key,
        pool: PoolIndex,
        project_acc: Vec,
        dept_acc: Vec,
        project_np: Vec | None,
        dept_np: Vec | None,
        running_queue: dict[str, WorkloadState],
        running_pool: dict[str, WorkloadState],
    ) -> None:
        self.key = key
        self.pool = pool
        self.project_acc = project_acc
        self.dept_acc = dept_acc
        self.project_np = project_np
        self.dept_np = dept_np
        self.all_acc: tuple[Vec, ...] = (project_acc, dept_acc)
        if project_np is not None and dept_np is not None:
            self.all_acc = (project_acc, dept_acc, project_np, dept_np)
        self.running_queue = running_queue
        self.running_pool = running_pool
