"""What an event may say about the other side: the one rule for every surface that shows
events (the console's pages, the websocket, the API).

An eviction, and an elastic workload's shrink, records the workload it made room for
(`details.by`) and that workload's project (`details.by_project_id`), and its reason names
one of them ("reclaimed by nlp", "preempted by higher-priority train-7"). A viewer who may
not see that project reads instead that another project took the GPUs: the reason is
replaced by a neutral one and the two details are left out. Priority preemption inside one
project names nothing the viewer of the event could not see already. Shrink events
recorded before they carried `by` name their beneficiary in the reason alone: they read
neutrally to everyone who does not see every project.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.choices import EventType
from scheduler_core.engine import EVICT_PRIORITY, EVICT_RECLAIM

OTHER_SIDE_DETAILS = ("by", "by_project_id")
NEUTRAL_REASONS = {
    EVICT_RECLAIM: "reclaimed by another project",
    EVICT_PRIORITY: "preempted by a higher-priority workload of another project",
}


FALLBACK_REASONS: dict[str, str] = {
    EventType.PREEMPTED: "evicted for another project",
    EventType.SHRUNK: "gave up pods to another project",
}
"""The neutral reason of an event whose kind names no neutral reason (older records)."""
OTHER_SIDE_TYPES = tuple(FALLBACK_REASONS)
"""Events that may name the workload they made room for."""
UNNAMED_BEFORE = ("reclaimed by ", "preempted by ")
"""How the reason of a shrink recorded without `by` starts when it names its beneficiary."""


def names_another_project(
    type: str, project_id: int | None, details: dict[str, Any], reason: str = ""
) -> bool:
    """Whether an event names a workload of a project other than its own (an unknown
    project counts as another one)."""
    if type not in OTHER_SIDE_TYPES:
        return False
    if details.get("by") is not None:
        return details.get("by_project_id") != project_id
    return type == EventType.SHRUNK and reason.startswith(UNNAMED_BEFORE)


def as_seen_by(
    project_ids: set[int] | None,
    *,
    type: str,
    project_id: int | None,
    reason: str,
    details: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """(reason, details) of an event as a viewer who may see `project_ids` (None: every
    project) reads them."""
    if project_ids is None or not names_another_project(type, project_id, details, reason):
        return reason, details
    if details.get("by_project_id") in project_ids:
        return reason, details
    neutral = NEUTRAL_REASONS.get(details.get("kind", ""), FALLBACK_REASONS.get(type, ""))
    return neutral, {k: v for k, v in details.items() if k not in OTHER_SIDE_DETAILS}
