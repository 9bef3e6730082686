"""The priority plugin: higher priority first inside a queue; victims lowest first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.framework.plugin import Plugin, register
from scheduler_core.engine.framework.state import priority_order

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState


@register
class PriorityPlugin(Plugin):
    """Job order: priority_order. Victim order: lowest priority first, then the most
    recently started (least work lost; a run started in this cycle, or in a later
    cycle at the same time, counts as the more recent)."""

    name = "priority"

    def job_order_key(self, w: WorkloadState) -> tuple[float, ...]:
        return priority_order(w)

    def victim_order_key(self, session: Session, w: WorkloadState) -> tuple[float, ...]:
        spec = w.spec
        if spec.started_at is None:  # started in this cycle
            started, cycle = session.now, session.snapshot.cycle
        else:
            started, cycle = spec.started_at, spec.started_cycle
        return (w.priority, -started, -cycle, -spec.submitted_at, -spec.creation_order)
