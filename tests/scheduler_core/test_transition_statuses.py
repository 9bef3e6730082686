"""The pure transitions name the same statuses as the models' choices."""

from scheduler_core.choices import PLACED_STATES, WorkloadStatus
from scheduler_core.engine import transitions


def test_the_transitions_statuses_are_the_workload_statuses():
    names = ("PENDING", "STARTING", "RUNNING", "SUSPENDED", "COMPLETED", "FAILED", "CANCELLED")
    assert {getattr(transitions, n) for n in names} == set(WorkloadStatus.values)
    assert all(getattr(transitions, n) == getattr(WorkloadStatus, n).value for n in names)
    assert transitions.PLACED == PLACED_STATES


def test_the_pools_schema_knows_every_backend_and_each_has_an_executor():
    from scheduler_core.choices import Backend
    from scheduler_core.runtime.registry import EXECUTORS, executor_for
    from scheduler_core.schemas.pools import BACKENDS

    assert set(BACKENDS) == set(Backend.values) == set(EXECUTORS)
    assert all(executor_for(b).backend == b for b in Backend.values)
