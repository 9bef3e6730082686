"""The proportion (fairshare) division, Run:ai/KAI style, and time-based usage.

Each resource is divided separately, top-down (pool -> departments -> projects): every
queue first gets min(deserved, requested); what is left goes to higher ranks first and,
within a rank, by over-quota weight among the queues that still ask, capped at what each
asks and its limit. A queue's over-quota share is rounded down to whole units and the
units left over go one at a time to the largest remainder (then the older queue).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scheduler_core.engine.resources import EPSILON
from scheduler_core.engine.snapshot import UsageRecord


@dataclass(slots=True)
class ShareClaim:
    """One queue's claim on a resource at one level of the tree.

    usage is its normalized historical usage (0..1, time-based fairshare only)."""

    key: str
    deserved: float
    requested: float
    limit: float
    rank: int
    weight: float
    order: int
    usage: float = 0.0


def _adjusted_weights(claims: Sequence[ShareClaim], k: float | None) -> list[float]:
    weights = [max(0.0, c.weight) for c in claims]
    total = sum(weights)
    if total <= EPSILON or math.isinf(total):
        weights = [1.0] * len(claims)
        total = float(len(claims))
    if k is None:
        return weights
    # KAI time-based fairshare: a queue that used more than its weight's share of the
    # pool gets a smaller over-quota weight, one that used less a bigger one.
    shares = [w / total for w in weights]
    adjusted = [max(0.0, s + k * (s - c.usage)) for s, c in zip(shares, claims, strict=True)]
    if sum(adjusted) <= EPSILON:
        return shares
    return adjusted


def divide(total: float, claims: Sequence[ShareClaim], k: float | None = None) -> dict[str, float]:
    """Fairshare of each claim's queue out of `total` (see module doc). `k` enables
    time-based weight adjustment with that strength."""
    fair: dict[str, float] = {}
    want: dict[str, float] = {}
    for c in claims:
        cap = max(0.0, min(c.requested, c.limit))
        want[c.key] = cap
        fair[c.key] = min(c.deserved, cap)
    remaining = total - sum(fair.values()) if claims else total
    if remaining <= EPSILON:
        return fair
    for rank in sorted({c.rank for c in claims}, reverse=True):
        group = [c for c in claims if c.rank == rank]
        while remaining > EPSILON:
            asking = [c for c in group if want[c.key] - fair[c.key] > EPSILON]
            if not asking:
                break
            if math.isinf(remaining):
                for c in asking:
                    fair[c.key] = want[c.key]
                break
            weights = _adjusted_weights(asking, k)
            wsum = sum(weights)
            shares = [remaining * w / wsum for w in weights]
            capped = [
                (c, s)
                for c, s in zip(asking, shares, strict=True)
                if s >= want[c.key] - fair[c.key] - EPSILON
            ]
            if capped:
                for c, _ in capped:
                    remaining -= want[c.key] - fair[c.key]
                    fair[c.key] = want[c.key]
                continue
            floors = [math.floor(s + EPSILON) for s in shares]
            for c, f in zip(asking, floors, strict=True):
                fair[c.key] += f
                remaining -= f
            units = math.floor(remaining + EPSILON)
            by_remainder = sorted(
                zip(asking, shares, floors, strict=True),
                key=lambda t: (-(t[1] - t[2]), t[0].order),
            )
            for c, _, _ in by_remainder:
                if units <= 0:
                    break
                give = min(1.0, want[c.key] - fair[c.key])
                if give <= EPSILON:
                    continue
                fair[c.key] += give
                remaining -= give
                units -= 1
            break
        if remaining <= EPSILON:
            break
    return fair


def decayed_usage(
    records: Iterable[UsageRecord], now: float, window: float, half_life: float
) -> dict[tuple[str, str], float]:
    """GPU-seconds per (queue, pool) within the window, each decayed by
    0.5 ** (age / half_life) (age measured at the middle of the record)."""
    usage: dict[tuple[str, str], float] = {}
    start_window = now - window
    for r in records:
        start = max(r.start, start_window)
        end = min(r.end, now)
        if end <= start and r.end > r.start:
            continue
        span = r.end - r.start
        part = (end - start) / span if span > EPSILON else 1.0
        age = now - (start + end) / 2.0
        decay = 0.5 ** (age / half_life) if half_life > 0 else 1.0
        key = (r.queue, r.pool)
        usage[key] = usage.get(key, 0.0) + r.gpu_seconds * part * decay
    return usage


def decayed_capacity_seconds(gpus: float, window: float, half_life: float) -> float:
    """GPU-seconds a pool of `gpus` could have delivered in the window, decayed the same
    way: the denominator that normalizes usage to capacity."""
    if half_life <= 0:
        return gpus * window
    return float(gpus * half_life / math.log(2) * (1.0 - 0.5 ** (window / half_life)))
