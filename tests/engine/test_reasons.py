"""Times in pending reasons read like a clock, not like a timestamp."""

from datetime import UTC, datetime

from scheduler_core.engine.reasons import format_time


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_simulated_time_is_seconds_from_zero():
    assert format_time(600) == "t=600"


def test_live_time_today_is_a_utc_clock_time():
    assert format_time(epoch("2026-11-21T14:05:30"), epoch("2026-11-21T13:00")) == "14:05 UTC"


def test_live_time_on_another_day_carries_the_date():
    later = format_time(epoch("2026-11-22T00:10"), epoch("2026-11-21T23:50"))
    assert later == "2026-11-22 00:10 UTC"
