"""Many scheduling events written in one INSERT and published together after commit.

A cycle or a runtime tick may change hundreds of workloads; `event_record` writes one row
per call, this writes them all at once (scheduler_core.db.bulk_writes.insert_rows: no model
instance per event), with the same payloads and the same after-commit publishing
(scheduler_core.live_events.recording.publish_after_commit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler_core.db.bulk_writes import insert_rows
from scheduler_core.db.locked_workload import LockedWorkload
from scheduler_core.live_events.recording import publish_after_commit, workload_state
from scheduler_core.models import SchedulingEvent, Workload

EVENT_FIELDS = (
    "created_at", "type", "workload", "project", "department", "pool", "node", "reason",
    "details",
)  # fmt: skip


@dataclass(slots=True)
class EventRow:
    """One event to write: the attributes of a SchedulingEvent that a payload reads."""

    created_at: datetime
    type: str
    workload_id: int | None
    project_id: int | None
    pool_id: int | None
    node_id: int | None
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    department_id: int | None = None
    pk: int | None = None

    def values(self) -> tuple[Any, ...]:
        """Its values in EVENT_FIELDS order."""
        return (
            self.created_at, self.type, self.workload_id, self.project_id, self.department_id,
            self.pool_id, self.node_id, self.reason, self.details,
        )  # fmt: skip


class EventBatch:
    """Collects events, then `flush()` writes and schedules their publishing."""

    def __init__(self, at: datetime) -> None:
        self.at = at
        self.items: list[tuple[EventRow, dict[str, Any] | None]] = []

    def add(
        self,
        *,
        type: str,
        workload: Workload | LockedWorkload | None = None,
        project_id: int | None = None,
        pool_id: int | None = None,
        node_id: int | None = None,
        reason: str = "",
        details: dict[str, Any] | None = None,
        nodes: list[str] | None = None,
        at: datetime | None = None,
    ) -> None:
        """Add one event (at the batch's time unless `at` says when it happened); `nodes`
        (one name per pod) goes into the workload's state."""
        event = EventRow(
            created_at=at or self.at,
            type=type,
            workload_id=workload.pk if workload is not None else None,
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

    def flush(self) -> list[EventRow]:
        """Write the events (one INSERT per 5,000) and publish them after commit."""
        if not self.items:
            return []
        events = [e for e, _ in self.items]
        pks = insert_rows(SchedulingEvent, EVENT_FIELDS, [e.values() for e in events])
        for event, pk in zip(events, pks, strict=True):
            event.pk = pk
        publish_after_commit(self.items)
        self.items = []
        return events
