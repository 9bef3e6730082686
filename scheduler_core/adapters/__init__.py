"""ORM <-> engine: read the database as a ClusterSnapshot, write a CycleResult back."""

from scheduler_core.adapters.apply import ApplyOutcome, RefreshSlice, apply_decisions
from scheduler_core.adapters.queue_state import totals, write_queue_states
from scheduler_core.adapters.snapshot import LiveSnapshot, load_snapshot

__all__ = [
    "ApplyOutcome",
    "LiveSnapshot",
    "RefreshSlice",
    "apply_decisions",
    "load_snapshot",
    "totals",
    "write_queue_states",
]
