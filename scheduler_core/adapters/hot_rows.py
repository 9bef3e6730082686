"""Which active workloads a snapshot reads each cycle: every placed one, every waiting
one read before, and at most a bounded number of waiting ones new since (the longest
waiting first), so that a flood of submissions is taken in over a few short cycles.

Waiting workloads are read in order of submission up to a mark, the (submitted_at, pk)
of the last one read, which advances by at most the bound each cycle. Those past the
mark stay in the database: a cycle does not transfer the tens of thousands of rows of a
flood only to leave them out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q

from scheduler_core.choices import ACTIVE_STATES, WorkloadStatus
from scheduler_core.models import Workload

HOT_FIELDS = (
    "pk", "version", "status", "restarts", "pending_reason", "pending_reason_kind",
    "queue_position", "started_at", "progress_seconds", "pending_since", "room_wait_since",
    "preemptions", "quick_evictions",
)  # fmt: skip
"""What the scheduler itself changes: read every cycle."""

Mark = tuple[datetime, int]
ORDER = ("submitted_at", "pk")


def read_hot(
    now: datetime, known: Any, mark: Mark | None, new_limit: int | None
) -> tuple[list[tuple[Any, ...]], int, Mark | None]:
    """(rows of HOT_FIELDS in order of submission, the new ones last; how many waiting
    workloads were left for later; the new mark). `known`: the workloads read before (a
    container of pks); without `new_limit` every active workload is read, no mark."""
    active = Workload.objects.filter(status__in=ACTIVE_STATES).exclude(
        # backing off after a failed run: not scheduled before its retry time
        status=WorkloadStatus.PENDING,
        retry_at__gt=now,
    )
    if new_limit is None:
        return list(active.order_by(*ORDER).values_list(*HOT_FIELDS)), 0, None
    later = Q(status=WorkloadStatus.PENDING)
    if mark is not None:
        later &= Q(submitted_at__gt=mark[0]) | Q(submitted_at=mark[0], pk__gt=mark[1])
    older = list(active.exclude(later).order_by(*ORDER).values_list(*HOT_FIELDS))
    # waiting workloads up to the mark that are new all the same (their retry time came,
    # or their submission committed late) count against the bound first
    new_older = sum(1 for row in older if row[2] == WorkloadStatus.PENDING and row[0] not in known)
    room = max(new_limit - new_older, 0)
    newer = list(
        active.filter(later).order_by(*ORDER).values_list(*HOT_FIELDS, "submitted_at")[: room + 1]
    )
    unseen = 0
    if len(newer) > room:
        newer = newer[:room]
        unseen = active.filter(later).count() - room
    if newer:
        mark = (newer[-1][-1], newer[-1][0])
    # the waiting ones read before all come before the new ones (the order the engine
    # is given does not decide anything: it orders jobs by their own keys)
    older.extend(row[:-1] for row in newer)
    return older, unseen, mark
