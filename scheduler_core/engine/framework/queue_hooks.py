"""What the session asks about queues: the hooks of the plugin that keeps quotas and
fairshare (the proportion plugin, like KAI-Scheduler's queue order, reclaimable and
over-capacity functions). Actions reach them through the session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scheduler_core.engine.decisions import QueueStatus
    from scheduler_core.engine.framework.session import Vec
    from scheduler_core.engine.framework.state import WorkloadState


class QueueHooks(Protocol):
    """Queue order, fairshare and quota verdicts, admission, reclaimability and the
    queue figures of a result, for the open session."""

    def queue_order_key(
        self, queue: str, w: WorkloadState, pool: str, extra: Vec
    ) -> tuple[object, ...]:
        """Order of `queue` (a department or a project) in `pool` serving `w`, which
        takes `extra` (smaller first): one level of the queue tree."""
        ...

    def queue_order_inputs(self, queue: str, pool: str) -> object:
        """What queue_order_key of `queue` depends on that may change within a session
        (the same inputs and candidate give the same key)."""
        ...

    def victim_queue_key(self, queue: str, pool: str, minus: Sequence[float]) -> tuple[object, ...]:
        """Order in which queues give up a running workload holding `minus` to a
        reclaimer (smaller first)."""
        ...

    def over_fairshare(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` exceed its fairshare with `extra`?"""
        ...

    def over_fairshare_by(self, queue: str, pool: str, extra: Vec) -> float:
        """GPUs `queue` would hold over its fairshare with `extra` (0 when within)."""
        ...

    def above_fairshare(self, queue: str, pool: str) -> bool:
        """Does `queue` hold more than its fairshare now?"""
        ...

    def within_deserved(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` stay within its deserved quota with `extra`?"""
        ...

    def beyond_deserved(self, queue: str, level: str, pool: str, extra: Vec) -> str | None:
        """If `queue` (a project or department: `level`) would exceed its deserved quota
        with `extra`, that fact with its figures, else None."""
        ...

    def spare_gpus(self, queue: str, pool: str) -> float:
        """GPUs `queue` holds above its deserved quota."""
        ...

    def may_give_back(
        self, queue: str, pool: str, freed: tuple[float, float, float], deserved_mode: bool
    ) -> bool:
        """May `queue` give `freed` back to a reclaimer?"""
        ...

    def straddle_reason(
        self, queue: str, level: str, pool: str, freed: tuple[float, float, float]
    ) -> str | None:
        """Why giving back `freed` may take `queue` below its deserved quota, or None."""
        ...

    def could_give_back(self, queue: str, pool: str, deserved_mode: bool) -> bool:
        """Could `queue` give anything back at all?"""
        ...

    def admission_problem(self, w: WorkloadState, pool: str, extra: Vec) -> tuple[str, str] | None:
        """(kind, reason) why `w` may not take `extra` more in `pool`, or None."""
        ...

    def fairshare_blocked(self, queue: str, level: str, pool: str, extra: Vec) -> str:
        """Why `queue` (a project or department: `level`) may not reclaim `extra`."""
        ...

    def queue_statuses(self) -> dict[str, dict[str, QueueStatus]]:
        """Every queue's figures in every pool, as they stand now."""
        ...
