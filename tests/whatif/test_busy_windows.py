"""The busiest windows of a trace, for testing a policy where it matters."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler_core.whatif.busy_windows import busiest_windows
from scheduler_core.whatif.traces import TraceJob

ORIGIN = datetime(2017, 10, 1, tzinfo=UTC)
H = 3600.0


def _job(hour: float, gpus: int, hours: float = 1.0) -> TraceJob:
    return TraceJob("", "t", hour * H, hours * H, gpus)


def test_the_busiest_windows_come_first_and_never_closer_than_two_windows() -> None:
    jobs = [_job(0, 1), _job(10, 64), _job(12, 32), _job(30, 16), _job(80, 8)]
    found = busiest_windows(jobs, origin=ORIGIN, hours=24, count=3)
    # the busiest 24 h holds hours 10, 12 and 30 (112 GPU-h); the first window that does
    # starts at hour 7. The next may start no sooner than 48 h later: the first that holds
    # hour 80's job starts at hour 57
    assert found == [
        (datetime(2017, 10, 1, 7, tzinfo=UTC), 112.0),
        (datetime(2017, 10, 3, 9, tzinfo=UTC), 8.0),
    ]
    assert busiest_windows([], origin=ORIGIN, hours=24, count=3) == []
