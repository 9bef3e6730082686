"""The proportion division, table-driven."""

from __future__ import annotations

import math

import pytest

from scheduler_core.engine.plugins.proportion.division import (
    ShareClaim,
    decayed_capacity_seconds,
    decayed_usage,
    divide,
    over_quota_weights,
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


@pytest.mark.parametrize(
    ("total", "claims", "expected"),
    [
        # weight 0 gets no over-quota share, even of idle GPUs nobody else asks for
        (10, [claim("a", 0, 4), claim("z", 2, 10, weight=0, order=1)], {"a": 4, "z": 2}),
        # beside a queue of weight 1: everything over quota goes to that one
        (10, [claim("a", 0, 10), claim("z", 0, 10, weight=0, order=1)], {"a": 10, "z": 0}),
        # every asking queue has weight 0: nothing of the remainder is given at all
        (
            10,
            [claim("z1", 2, 10, weight=0), claim("z2", 0, 5, weight=0, order=1)],
            {"z1": 2, "z2": 0},
        ),
        # ... and it passes to the lower rank
        (
            8,
            [claim("z", 0, 10, weight=0, rank=2), claim("low", 0, 10, rank=1, order=1)],
            {"z": 0, "low": 8},
        ),
        # the leftover unit goes by largest remainder, never to weight 0
        (
            3,
            [claim("a", 0, 10), claim("b", 0, 10, order=1), claim("z", 0, 10, weight=0, order=2)],
            {"a": 2, "b": 1, "z": 0},
        ),
        # unlimited capacity: weight 0 still gets only its deserved quota
        (math.inf, [claim("a", 0, 7), claim("z", 1, 3, weight=0, order=1)], {"a": 7, "z": 1}),
    ],
)
def test_weight_zero_gets_no_over_quota_share(
    total: float, claims: list[ShareClaim], expected: dict[str, float]
) -> None:
    assert divide(total, claims) == pytest.approx(expected)


def test_weight_zero_stays_zero_with_time_based_fairshare() -> None:
    shares = divide(8, [claim("a", 0, 8, usage=0.9), claim("z", 0, 8, weight=0, order=1)], k=1.0)
    assert shares == pytest.approx({"a": 8, "z": 0})


@pytest.mark.parametrize(
    ("weights", "usages", "k", "expected"),
    [
        # point in time: the weights as they are
        ([2, 1, 0], [0.5, 0, 0], None, [2, 1, 0]),
        # w is the fraction of the asking queues' weights: 0.25 and 0.75
        ([1, 3], [0, 0], 1.0, [0.5, 1.5]),
        # max(0, w + k * (w - usage))
        ([1, 3], [0.5, 0.5], 1.0, [0.0, 1.0]),
        ([1, 1], [0.75, 0.0], 2.0, [0.0, 1.5]),
        # weight 0 stays 0 whatever its usage
        ([0, 1], [0, 0.2], 1.0, [0.0, 1.8]),
    ],
)
def test_over_quota_weights(
    weights: list[float], usages: list[float], k: float | None, expected: list[float]
) -> None:
    claims = [
        claim(f"q{i}", 0, 10, weight=w, usage=u)
        for i, (w, u) in enumerate(zip(weights, usages, strict=True))
    ]
    assert over_quota_weights(claims, k) == pytest.approx(expected)


H = 1000.0  # half-life of the records below
C = H / math.log(2)  # the integral of 0.5 ** (age / H) over all ages


@pytest.mark.parametrize(
    ("records", "window", "expected"),
    [
        # 8 GPUs for the whole window, in four samples: the capacity of 8 GPUs exactly
        (
            [UsageRecord("q", "p", t, t + 500, 8 * 500) for t in (0, 500, 1000, 1500)],
            2000,
            8 * C * (1 - 0.25),
        ),
        # decayed over its own span, not at its middle: 1 GPU from 2H to H ago
        ([UsageRecord("q", "p", 0, 1000, 1000)], 2000, C * (0.5 - 0.25)),
        # only the part inside the window counts (a quarter of it, the oldest is cut off)
        ([UsageRecord("q", "p", -2000, 2000, 4000)], 2000, C * (1 - 0.25)),
        # outside the window: nothing
        ([UsageRecord("q", "p", -900, -100, 800)], 2000, 0.0),
        # a record without a span counts at its age
        ([UsageRecord("q", "p", 1000, 1000, 50)], 2000, 25.0),
    ],
)
def test_decayed_usage_integrates_the_decay_over_each_sample(
    records: list[UsageRecord], window: float, expected: float
) -> None:
    usage = decayed_usage(records, now=2000, window=window, half_life=H)
    assert usage.get(("q", "p"), 0.0) == pytest.approx(expected)


def test_a_queue_that_held_the_whole_pool_for_the_whole_window_has_usage_one() -> None:
    window, half_life, gpus = 604800.0, 86400.0, 16
    samples = [UsageRecord("q", "p", t, t + 3600, gpus * 3600) for t in range(0, int(window), 3600)]
    usage = decayed_usage(samples, now=window, window=window, half_life=half_life)
    denominator = decayed_capacity_seconds(gpus, window, half_life)
    assert usage[("q", "p")] / denominator == pytest.approx(1.0)


def test_without_half_life_nothing_decays() -> None:
    assert decayed_capacity_seconds(10, 100, 0) == 1000
    usage = decayed_usage([UsageRecord("q", "p", 0, 100, 300)], now=100, window=50, half_life=0)
    assert usage[("q", "p")] == pytest.approx(150)
