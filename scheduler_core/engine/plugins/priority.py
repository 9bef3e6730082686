"""The priority plugin: higher priority first inside a queue; victims lowest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.framework.plugin import Plugin, register
from scheduler_core.engine.lost_work import lost_gpu_seconds

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState


def priority_order(w: WorkloadState) -> tuple[float, ...]:
    """Job order by priority (smaller first): higher priority, earlier submission,
    then creation order (FIFO among equals). The one definition: Determined's priority
    policy and the queue positions of a result use it too."""
    spec = w.spec
    return (-w.priority, spec.submitted_at, spec.creation_order)


@register
class PriorityPlugin(Plugin):
    """Job order: priority_order. Victim order: lowest priority first, then the least
    work lost (GPUs held x time since it started: a young or small run before one that
    has run long on many GPUs), then the most recently started."""

    name = "priority"

    def job_order_key(self, w: WorkloadState) -> tuple[float, ...]:
        return priority_order(w)

    def victim_order_key(self, session: Session, w: WorkloadState) -> tuple[float, ...]:
        spec = w.spec
        started = spec.started_at if spec.started_at is not None else session.now
        lost = lost_gpu_seconds(spec, session.now, w.allocated()[0])
        return (w.priority, lost, -started, -spec.submitted_at, -spec.creation_order)
