"""The proportion division, table-driven."""

from __future__ import annotations

import math

import pytest

from scheduler_core.engine.plugins.proportion.division import (
    ShareClaim,
    decayed_capacity_seconds,
    decayed_usage,
    divide,
)
from scheduler_core.engine.snapshot import UsageRecord


def claim(
    key: str,
    deserved: float,
    requested: float,
    weight: float = 1,
    rank: int = 0,
    limit: float = math.inf,
    order: int = 0,
    usage: float = 0.0,
) -> ShareClaim:
    return ShareClaim(key, deserved, requested, limit, rank, weight, order, usage)


@pytest.mark.parametrize(
    ("total", "claims", "expected"),
    [
        # Run:ai formula: quotas 10/6/0, weights 2/3/1, 36 GPUs -> 17/16/3
        (
            36,
            [
                claim("p1", 10, 20, 2, order=0),
                claim("p2", 6, 20, 3, order=1),
                claim("p3", 0, 20, 1, order=2),
            ],
            {"p1": 17, "p2": 16, "p3": 3},
        ),
        # effective fairshare follows demand
        (20, [claim("q1", 5, 15), claim("q2", 5, 5, order=1)], {"q1": 15, "q2": 5}),
        (20, [claim("q1", 5, 15), claim("q2", 5, 10, order=1)], {"q1": 10, "q2": 10}),
        # higher rank first
        (
            4,
            [claim("high", 0, 4, rank=2), claim("low", 0, 4, rank=1, order=1)],
            {"high": 4, "low": 0},
        ),
        # limit caps the share, the rest goes to others
        (12, [claim("a", 0, 12, limit=3), claim("b", 0, 12, order=1)], {"a": 3, "b": 9}),
        # nobody asks: nothing given beyond requests
        (10, [claim("a", 5, 2), claim("b", 5, 0, order=1)], {"a": 2, "b": 0}),
        # leftover unit to the older queue on equal remainders
        (3, [claim("a", 0, 10, order=0), claim("b", 0, 10, order=1)], {"a": 2, "b": 1}),
        # unlimited capacity (cpu not stated): everyone gets what it asks
        (math.inf, [claim("a", math.inf, 7), claim("b", 0, 3, order=1)], {"a": 7, "b": 3}),
    ],
)
def test_divide(total: float, claims: list[ShareClaim], expected: dict[str, float]) -> None:
    assert divide(total, claims) == pytest.approx(expected)


def test_time_based_weights_favour_the_queue_that_used_less() -> None:
    busy = claim("busy", 0, 16, usage=0.8)
    idle = claim("idle", 0, 16, order=1, usage=0.0)
    shares = divide(16, [busy, idle], k=1.0)
    assert shares["idle"] > shares["busy"]
    assert shares["idle"] + shares["busy"] == pytest.approx(16)


def test_decayed_usage_halves_per_half_life_and_respects_the_window() -> None:
    records = [
        UsageRecord("q", "pool", 0, 10, 100.0),  # centred 95 s ago
        UsageRecord("q", "pool", 90, 100, 100.0),  # centred 5 s ago
        UsageRecord("old", "pool", -500, -400, 100.0),  # outside the window
    ]
    usage = decayed_usage(records, now=100, window=200, half_life=90)
    assert usage[("q", "pool")] == pytest.approx(100 * 0.5 ** (95 / 90) + 100 * 0.5 ** (5 / 90))
    assert ("old", "pool") not in usage
    assert decayed_capacity_seconds(10, 100, 0) == 1000
