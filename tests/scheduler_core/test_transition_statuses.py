"""The pure transitions name the same statuses as the models' choices."""

from scheduler_core.choices import PLACED_STATES, WorkloadStatus
from scheduler_core.engine import transitions


def test_the_transitions_statuses_are_the_workload_statuses():
    names = ("PENDING", "STARTING", "RUNNING", "SUSPENDED", "COMPLETED", "FAILED", "CANCELLED")
    assert {getattr(transitions, n) for n in names} == set(WorkloadStatus.values)
    assert all(getattr(transitions, n) == getattr(WorkloadStatus, n).value for n in names)
    assert transitions.PLACED == PLACED_STATES
