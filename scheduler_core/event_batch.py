"""Many scheduling events written in one INSERT and published together after commit.

A cycle or a runtime tick may change hundreds of workloads; `event_record` writes one row
per call, this writes them all at once, with the same payloads and the same after-commit
publishing (scheduler_core.events.publish_after_commit).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduler_core.events import publish_after_commit, workload_state
from scheduler_core.models import SchedulingEvent, Workload


class EventBatch:
    """Collects events, then `flush()` writes and schedules their publishing."""

    def __init__(self, at: datetime) -> None:
        self.at = at
        self.items: list[tuple[SchedulingEvent, dict[str, Any] | None]] = []

    def add(
        self,
        *,
        type: str,
        workload: Workload | None = None,
        project_id: int | None = None,
        pool_id: int | None = None,
        node_id: int | None = None,
        reason: str = "",
        details: dict[str, Any] | None = None,
        nodes: list[str] | None = None,
    ) -> None:
        """Add one event; `nodes` (one name per pod) goes into the workload's state."""
        event = SchedulingEvent(
            created_at=self.at,
            type=type,
            workload=workload,
            project_id=project_id or (workload.project_id if workload is not None else None),
            pool_id=pool_id,
            node_id=node_id,
            reason=reason,
            details=details or {},
        )
        state = workload_state(workload, nodes) if workload is not None else None
        self.items.append((event, state))

    def __len__(self) -> int:
        return len(self.items)

    def flush(self) -> list[SchedulingEvent]:
        """Write the events (one INSERT per 500) and publish them after commit."""
        if not self.items:
            return []
        events = SchedulingEvent.objects.bulk_create([e for e, _ in self.items], batch_size=500)
        publish_after_commit(self.items)
        self.items = []
        return events
