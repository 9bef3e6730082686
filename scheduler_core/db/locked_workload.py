"""A workload row locked for a scheduling cycle's apply step, without a model instance.

The apply step locks hundreds of workloads per cycle. It reads, checks, changes and
publishes only the fields below, and writes them back with bulk_writes.update_rows; a
Django model instance per row (signals, field descriptors, state) cost more than the
locking query. Code that takes a workload and only uses these fields (finishing a run,
an event's workload state) accepts either.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from django.db.models import QuerySet


@dataclass(slots=True)
class LockedWorkload:
    """The fields of a locked workload the apply step reads or writes (names as on
    Workload)."""

    id: int
    project_id: int
    name: str
    priority: int
    status: str
    pending_reason: str
    pending_reason_kind: str
    queue_position: int | None
    started_at: datetime | None
    finished_at: datetime | None
    progress_seconds: float
    restarts: int
    version: int
    updated_at: datetime
    pending_since: datetime | None
    room_wait_since: datetime | None
    preemptions: int
    quick_evictions: int
    backoff_limit: int | None

    @property
    def pk(self) -> int:
        return self.id


LOCKED_FIELDS = tuple(f.name for f in fields(LockedWorkload))


def lock_workloads(queryset: QuerySet) -> list[LockedWorkload]:
    """The workloads of `queryset`, locked (select_for_update) in primary key order."""
    rows = queryset.select_for_update(no_key=True).order_by("pk").values_list(*LOCKED_FIELDS)
    return [LockedWorkload(*row) for row in rows]
