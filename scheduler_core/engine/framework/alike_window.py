"""The alike window: how many waiting workloads of one kind the actions look at.

A queue may hold thousands of waiting workloads of one kind (same project, shape,
selector and pools: WorkloadState.kind_key): a sweep, or a load test's stream of
1-GPU jobs. Alike workloads are interchangeable to admission and placement, and within
their queue they go in job order, so one cannot start while an alike one before it
cannot. So the actions look at the first ALIKE_WINDOW of each kind only; the others
are parked behind the last of them (the kind's lead) and give its reason. When the lead
starts, the next ALIKE_WINDOW are let in at once, in the same action (see
actions/common.in_queue_order), so what starts is what would start with every workload
in view; an action that starts a lead without letting the next ones in (consolidation)
leaves them for a cycle that the loop runs at once (CycleResult.more_alike). Demand,
fairshare, queue positions and the waits a reclaim may spend count every workload."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.engine.framework.state import WorkloadState

ALIKE_WINDOW = 32
"""Waiting workloads of one kind in view at a time."""


class _Kind:
    """The waiting workloads of one kind, in job order; those from `start` on are parked."""

    __slots__ = ("items", "start")

    def __init__(self, items: list[WorkloadState], start: int) -> None:
        self.items = items
        self.start = start

    def lead(self) -> WorkloadState:
        return self.items[self.start - 1]


class AlikeWindow:
    """Which waiting workloads are parked, behind which lead (see module doc)."""

    def __init__(
        self,
        pending: Iterable[WorkloadState],
        job_key: Callable[[WorkloadState], tuple[object, ...]],
        window: int,
    ) -> None:
        self._window = window
        by_kind: dict[int, list[WorkloadState]] = {}
        for w in pending:
            by_kind.setdefault(w.kind_key, []).append(w)
        # workload id -> (its kind, its index there), for the kinds longer than the window
        self._where: dict[str, tuple[_Kind, int]] = {}
        # lead id -> its kind, for the kinds that still park some
        self._by_lead: dict[str, _Kind] = {}
        for alike in by_kind.values():
            if len(alike) <= window:
                continue
            alike.sort(key=lambda w: (job_key(w), w.id))
            kind = _Kind(alike, window)
            for i, w in enumerate(alike):
                self._where[w.id] = (kind, i)
            self._by_lead[kind.lead().id] = kind

    def parked(self, wid: str) -> bool:
        """Is the workload `wid` out of view this cycle?"""
        found = self._where.get(wid)
        return found is not None and found[1] >= found[0].start

    def lead_of(self, wid: str) -> WorkloadState | None:
        """The workload a parked one waits behind (None when `wid` is not parked)."""
        found = self._where.get(wid)
        if found is None or found[1] < found[0].start:
            return None
        return found[0].lead()

    def let_in_after(self, lead: WorkloadState) -> list[WorkloadState]:
        """The next ones of the kind that `lead` (which started) leads, now in view."""
        kind = self._by_lead.pop(lead.id, None)
        if kind is None:
            return []
        start = kind.start
        kind.start = min(start + self._window, len(kind.items))
        if kind.start < len(kind.items):
            self._by_lead[kind.lead().id] = kind
        return kind.items[start : kind.start]

    def leads(self) -> list[WorkloadState]:
        """The lead of every kind that still parks some."""
        return [kind.lead() for kind in self._by_lead.values()]
