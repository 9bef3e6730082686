"""A statement: a journal of state changes that commits or discards as a whole.

Actions never touch session state directly: they bind and unbind pods and evict
workloads through a Statement. `discard()` undoes everything in reverse order, which is
what makes "evict these victims, try to place the job, put the victims back elsewhere,
keep it only if everything worked" cheap and safe. `mark()`/`rollback(mark)` undo just
the tail (a gang that did not fit) without giving up the statement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.snapshot import PodPlacement

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState

# journal entries: (op, workload, pod or saved fields)
_BIND = 0
_UNBIND = 1
_FLAGS = 2


class Statement:
    """Changes to a session that are kept (commit) or undone (discard) together."""

    __slots__ = ("_closed", "_journal", "_session")

    def __init__(self, session: Session) -> None:
        self._session = session
        self._journal: list[tuple[int, WorkloadState, object]] = []
        self._closed = False

    def mark(self) -> int:
        """A point to roll back to."""
        return len(self._journal)

    def rollback(self, mark: int) -> None:
        """Undo every change made after `mark`."""
        session = self._session
        while len(self._journal) > mark:
            op, w, data = self._journal.pop()
            if op == _BIND:
                assert isinstance(data, PodPlacement)
                # everything after the bind is undone: the pod is the last one again
                pods = w.pods
                session.unbind_pod(w, data, len(pods) - 1 if pods[-1] is data else None)
            elif op == _UNBIND:
                assert isinstance(data, tuple)
                pod, index = data
                session.bind_pod(w, pod, index)
            else:
                assert isinstance(data, tuple)
                w.set_flags(data)

    def bind(self, w: WorkloadState, pod: PodPlacement) -> None:
        """Bind one pod of `w` (the node must have room)."""
        self._session.bind_pod(w, pod, len(w.pods))
        self._journal.append((_BIND, w, pod))

    def unbind(self, w: WorkloadState, pod: PodPlacement) -> None:
        """Remove one running pod of `w`."""
        pods = w.pods
        last = len(pods) - 1
        # pods are given up last first: look there before searching
        index = last if last >= 0 and pods[last] is pod else pods.index(pod)
        self._session.unbind_pod(w, pod, index)
        self._journal.append((_UNBIND, w, (pod, index)))

    def _save_flags(self, w: WorkloadState) -> None:
        self._journal.append((_FLAGS, w, w.flags()))

    def evict(
        self, w: WorkloadState, reason_kind: str, reason: str, by: WorkloadState | None
    ) -> None:
        """Unbind every pod of `w` and record why (it goes back to pending)."""
        self._save_flags(w)
        w.evicted = True
        w.evict_kind = reason_kind
        w.evict_reason = reason
        w.evict_by = by
        for pod in list(reversed(w.pods)):
            self.unbind(w, pod)

    def fail(self, w: WorkloadState, reason: str) -> None:
        """Mark `w` failed (its pods must already be unbound)."""
        self._save_flags(w)
        w.failed = True
        w.fail_reason = reason

    def set_pool(self, w: WorkloadState, pool: str | None) -> None:
        """Record the pool `w` runs in."""
        self._save_flags(w)
        w.pool = pool

    def restore_flags(self, w: WorkloadState, flags: tuple[object, ...]) -> None:
        """Put back the eviction/move flags saved before a step that was given back."""
        self._save_flags(w)
        w.set_flags(flags)

    def note_reason(
        self, w: WorkloadState, reason: str, by: WorkloadState | None = None, kind: str = ""
    ) -> None:
        """Record why `w` was shrunk (shown with the Shrink decision): `reason`, the
        workload `by` it made room for and the eviction kind, when there is one."""
        self._save_flags(w)
        w.evict_reason = reason
        w.evict_by = by
        w.evict_kind = kind

    def mark_moved(self, w: WorkloadState) -> None:
        """Record that `w` was relocated by consolidation."""
        self._save_flags(w)
        w.moved = True

    def commit(self) -> None:
        """Keep every change."""
        self._closed = True
        self._journal.clear()
        self._session.on_commit()

    def discard(self) -> None:
        """Undo every change."""
        self.rollback(0)
        self._closed = True
