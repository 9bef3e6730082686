"""When the scheduling loop starts its next cycle (pure: no clock, no database).

A cycle refills the GPUs of the runs that ended before it began; a run that ends while
it is running waits, idle, for the cycle after it. So starting at once is not always
best: if runs holding many GPUs end a moment from now, a cycle that waits for them
refills those too, one cycle earlier, at the cost of the short wait for the GPUs that
are already free. `start_delay` weighs the two, in GPU-seconds left idle:

    cost(t) = (GPUs free now) * t
              + sum over runs ending at e <= t of  gpus * (t - e)
              + sum over runs ending at t < e < cycle of  gpus * (t + cycle - e)

for t = 0 and each moment a run ends within one cycle (`cycle`: how long the last one
took), and picks the cheapest (the earliest of equals). GPUs "free now" are those of
runs that already ended, plus, when a request is open (a submission, a cancel...), the
idle GPUs it might use. With nothing free and no request the loop just sleeps until the
first run ends, and not at all if that is further away than `horizon`.
"""

from __future__ import annotations

from collections.abc import Iterable


def run_weight(gpus: float) -> float:
    """What a run's end is worth: its GPUs, and one for a run without any (it frees
    CPUs and memory, and it must still be completed)."""
    return max(gpus, 1.0)


def start_delay(
    ends: Iterable[tuple[float, float]],
    *,
    cycle: float,
    request_gpus: float | None = None,
    horizon: float,
) -> float | None:
    """Seconds from now until the next cycle should start (0: now), or None when nothing
    is wanted within `horizon` seconds.

    `ends`: (seconds from now, GPUs) of runs ending (already ended: seconds <= 0);
    `request_gpus`: None when no request is open, else the idle GPUs it might use.
    """
    free_now = 0.0
    soon: dict[float, float] = {}
    first = None
    for at, gpus in ends:
        if at <= 0:
            free_now += gpus
            continue
        first = at if first is None else min(first, at)
        if at < cycle:
            soon[at] = soon.get(at, 0.0) + gpus
    if free_now == 0 and request_gpus is None:
        return first if first is not None and first <= horizon else None
    free_now += request_gpus or 0.0
    best, best_cost = 0.0, _cost(0.0, free_now, soon, cycle)
    for t in sorted(soon):
        cost = _cost(t, free_now, soon, cycle)
        if cost < best_cost - 1e-9:
            best, best_cost = t, cost
    return best


def _cost(t: float, free_now: float, soon: dict[float, float], cycle: float) -> float:
    """GPU-seconds left idle when the cycle starts `t` seconds from now."""
    cost = free_now * t
    for at, gpus in soon.items():
        cost += gpus * (t - at if at <= t else t + cycle - at)
    return cost
