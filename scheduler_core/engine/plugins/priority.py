"""The priority plugin: higher priority first inside a queue; victims lowest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.plugins import Plugin, register

if TYPE_CHECKING:
    from scheduler_core.engine.session import Session
    from scheduler_core.engine.state import WorkloadState


@register
class PriorityPlugin(Plugin):
    """Job order: higher priority, earlier submission, creation order. Victim order:
    lowest priority first, then the most recently started (least work lost)."""

    name = "priority"

    def job_order_key(self, w: WorkloadState) -> tuple[float, ...]:
        return (-w.priority, w.spec.submitted_at, w.spec.creation_order)

    def victim_order_key(self, session: Session, w: WorkloadState) -> tuple[float, ...]:
        started = w.spec.started_at if w.spec.started_at is not None else session.now
        return (w.priority, -started, -w.spec.submitted_at, -w.spec.creation_order)
