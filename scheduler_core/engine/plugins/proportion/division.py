"""The proportion (fairshare) division, Run:ai/KAI style, and time-based usage.

Each resource is divided separately, top-down (pool -> departments -> projects): every
queue first gets min(deserved, requested); what is left goes to higher ranks first and,
within a rank, by over-quota weight among the queues that still ask, capped at what each
asks and its limit; a queue of weight 0 gets none of it, and where only such queues
still ask, the rest passes to the lower ranks. A queue's over-quota share is rounded
down to whole units and the units left over go one at a time to the largest remainder
(then the older queue).
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


def over_quota_weights(claims: Sequence[ShareClaim], k: float | None) -> list[float]:
    """The weights by which the over-quota remainder is split among `claims` (the
    queues still asking at one rank). A queue of weight 0 gets none of it; all zero
    means nothing is given at this rank. With time-based fairshare (strength `k`) each
    weight becomes max(0, w + k * (w - usage)), `w` being its fraction of the weights
    of `claims` (KAI): a queue that used more than that share of the pool gets less,
    one that used less gets more. `k` is any non-negative finite number (FORMAT v1.2):
    w and usage are fractions, so the weights stay finite for any such k."""
    weights = [max(0.0, c.weight) for c in claims]
    if any(math.isinf(w) for w in weights):
        # an unbounded weight takes everything: such queues share it equally
        weights = [1.0 if math.isinf(w) else 0.0 for w in weights]
    total = sum(weights)
    if k is None or total <= EPSILON:
        return weights
    return [
        max(0.0, w / total + k * (w / total - c.usage)) if w > 0 else 0.0
        for w, c in zip(weights, claims, strict=True)
    ]


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
    by_rank: dict[int, list[ShareClaim]] = {}
    for c in claims:
        by_rank.setdefault(c.rank, []).append(c)
    for rank in sorted(by_rank, reverse=True):
        group = by_rank[rank]
        if k is None and not math.isinf(remaining) and all(math.isfinite(c.weight) for c in group):
            remaining = _water_fill(remaining, group, fair, want)
        else:
            remaining = _divide_by_rounds(remaining, group, fair, want, k)
        if remaining <= EPSILON:
            break
    return fair


def _divide_by_rounds(
    remaining: float,
    group: list[ShareClaim],
    fair: dict[str, float],
    want: dict[str, float],
    k: float | None,
) -> float:
    """Hand `remaining` out to one rank's claims by weight, in rounds: claims whose
    share covers what they still want get it and leave, the rest share again (weights
    that change with time-based `k`, or infinite ones). Returns what is left."""
    while remaining > EPSILON:
        asking = [c for c in group if want[c.key] - fair[c.key] > EPSILON]
        if not asking:
            break
        weights = over_quota_weights(asking, k)
        wsum = sum(weights)
        if wsum <= EPSILON:
            break  # only weight-0 queues ask here: the rest passes to lower ranks
        if math.isinf(remaining):
            for c, w in zip(asking, weights, strict=True):
                if w > 0:
                    fair[c.key] = want[c.key]
            break
        shares = [remaining * w / wsum for w in weights]
        capped = [
            (c, s)
            for c, s in zip(asking, shares, strict=True)
            if s >= want[c.key] - fair[c.key] - EPSILON
        ]
        if not capped:
            return _hand_out(asking, shares, fair, want, remaining)
        for c, _ in capped:
            remaining -= want[c.key] - fair[c.key]
            fair[c.key] = want[c.key]
    return remaining


def _water_fill(
    remaining: float, group: list[ShareClaim], fair: dict[str, float], want: dict[str, float]
) -> float:
    """One rank's over-quota division without time-based weights, in n log n: the same
    outcome as capping round after round (see divide), found by taking the queues in
    the order in which they reach their cap (what they still want over their weight,
    smallest first). Fills `fair` in place; returns what is left."""
    asking = [c for c in group if want[c.key] - fair[c.key] > EPSILON]
    weights = over_quota_weights(asking, None)
    wsum = math.fsum(weights)
    if wsum <= EPSILON:
        return remaining  # only weight-0 queues ask here: the rest passes to lower ranks
    # a queue is capped once its share remaining * w / wsum reaches what it still wants
    # (less EPSILON): once (gap - EPSILON) / w <= remaining / wsum. Capping one raises
    # remaining / wsum for the others, so the capped queues are a prefix in that order.
    order = sorted(
        (i for i, w in enumerate(weights) if w > 0),
        key=lambda i: (want[asking[i].key] - fair[asking[i].key] - EPSILON) / weights[i],
    )
    capped = [False] * len(asking)
    for i in order:
        c = asking[i]
        gap = want[c.key] - fair[c.key]
        if remaining <= EPSILON or remaining * weights[i] / wsum < gap - EPSILON:
            break
        remaining -= gap
        fair[c.key] = want[c.key]
        wsum -= weights[i]
        capped[i] = True
    rest = [(c, w) for c, w, done in zip(asking, weights, capped, strict=True) if not done]
    wsum = math.fsum(w for _, w in rest)
    if remaining <= EPSILON or wsum <= EPSILON:
        return remaining
    shares = [remaining * w / wsum for _, w in rest]
    return _hand_out([c for c, _ in rest], shares, fair, want, remaining)


def _hand_out(
    claims: list[ShareClaim],
    shares: list[float],
    fair: dict[str, float],
    want: dict[str, float],
    remaining: float,
) -> float:
    """Give each claim the whole units of its share, then the units left over one at a
    time by largest remainder (claim order breaking ties), never past what a claim
    wants. Fills `fair` in place; returns what is left."""
    floors = [math.floor(s + EPSILON) for s in shares]
    for c, f in zip(claims, floors, strict=True):
        fair[c.key] += f
        remaining -= f
    units = math.floor(remaining + EPSILON)
    by_remainder = sorted(
        zip(claims, shares, floors, strict=True), key=lambda t: (-(t[1] - t[2]), t[0].order)
    )
    for c, share, _ in by_remainder:
        if units <= 0:
            break
        if share <= EPSILON:
            continue  # weight 0: no over-quota share, not even a leftover unit
        give = min(1.0, want[c.key] - fair[c.key])
        if give <= EPSILON:
            continue
        fair[c.key] += give
        remaining -= give
        units -= 1
    return remaining


def decayed_seconds(start: float, end: float, now: float, half_life: float) -> float:
    """The seconds from `start` to `end`, each weighed by 0.5 ** (age / half_life) where
    age is its distance to `now`: the integral of the decay over that span."""
    if half_life <= 0:
        return end - start
    newest: float = 0.5 ** ((now - end) / half_life)
    oldest: float = 0.5 ** ((now - start) / half_life)
    return half_life / math.log(2) * (newest - oldest)


def decayed_usage(
    records: Iterable[UsageRecord], now: float, window: float, half_life: float
) -> dict[tuple[str, str], float]:
    """Decayed GPU-seconds per (queue, pool) within the window: each record's GPUs
    (its GPU-seconds spread evenly over its span) weighed by the decay of every second
    of the part of its span inside the window (see decayed_seconds); a record without
    a span counts at its age."""
    usage: dict[tuple[str, str], float] = {}
    start_window = now - window
    for r in records:
        start = max(r.start, start_window)
        end = min(r.end, now)
        span = r.end - r.start
        if span > EPSILON:
            if end <= start:
                continue
            value = r.gpu_seconds / span * decayed_seconds(start, end, now, half_life)
        else:
            if not start_window <= r.start <= now:
                continue
            decay: float = 0.5 ** ((now - r.start) / half_life) if half_life > 0 else 1.0
            value = r.gpu_seconds * decay
        key = (r.queue, r.pool)
        usage[key] = usage.get(key, 0.0) + value
    return usage


def decayed_capacity_seconds(gpus: float, window: float, half_life: float) -> float:
    """GPU-seconds a pool of `gpus` could have delivered in the window, decayed the same
    way: the denominator that normalizes usage to capacity (a queue that held the whole
    pool for the whole window has usage 1.0)."""
    return gpus * decayed_seconds(0.0, window, window, half_life)
