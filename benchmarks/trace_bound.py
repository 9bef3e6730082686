"""What no scheduler can avoid on a window of a job trace: long jobs that must run
uninterrupted for the window to end by a given makespan, held above the most their team
could be entitled to.

    python -m benchmarks.trace_bound ../shared/traces/philly.csv --start 2017-10-07T13:00 \
        --hours 24 --nodes 48 --vc ../shared/traces/philly_vc.csv [--makespan HOURS]

Without --makespan the bound is taken at FIFO with backfill's makespan on the same jobs
(the issue's target: "makespan no worse than FIFO with backfill").

The reasoning. Nothing checkpoints, so a job of duration d submitted at s that is to end
by M starts somewhere in [s, M - d] and then runs uninterrupted: in every schedule that
ends by M it is running throughout [M - d, s + d] (its forced span). During that span its
team holds at least the GPUs of its forced jobs. The most a team can be entitled to at a
time t (the replay's fairness metric: the capacity divided in proportion to the teams'
shares, none above its demand, water-filled) is reached when every other team asks as
little as it possibly can: the GPUs of its jobs submitted and too long to have finished
(s <= t < s + d). The GPU-time a team must hold above that most, over the window's work,
estimates the fairness deviation that any scheduler ending by M incurs. It is an
estimate, not a proof: the metric compares totals over the run, and a team could be kept
below its entitlement at another time (which delays its own jobs and so the makespan).
"""

from __future__ import annotations

import argparse
import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scheduler_core.whatif.replay import BACKFILL, replay_window
from scheduler_core.whatif.run_figures import HOUR, water_fill
from scheduler_core.whatif.traces import (
    TraceJob,
    parse_time,
    read_team_nodes,
    read_trace,
    trace_slice,
)

STEP = 60.0


@dataclass(frozen=True)
class TeamBound:
    """One team's forced GPU-time above its largest possible entitlement."""

    team: str
    forced_jobs: int
    forced_gpus: int
    excess_gpu_hours: float


@dataclass(frozen=True)
class WindowBound:
    """The bound for one window at makespan `makespan_hours`."""

    makespan_hours: float
    work_gpu_hours: float
    teams: list[TeamBound]

    @property
    def excess_gpu_hours(self) -> float:
        return sum(t.excess_gpu_hours for t in self.teams)

    @property
    def deviation(self) -> float:
        """The estimated least fairness deviation of a schedule ending by the makespan."""
        return self.excess_gpu_hours / self.work_gpu_hours if self.work_gpu_hours else 0.0


def forced_span(submitted: float, duration: float, makespan: float) -> tuple[float, float]:
    """When a job must be running in every schedule that ends by `makespan` (seconds);
    empty (start >= end) when it need not be."""
    return makespan - duration, submitted + duration


def least_demand(
    jobs: Iterable[TraceJob], team: str, times: Sequence[float]
) -> list[dict[str, float]]:
    """Per time of `times` (ascending), the GPUs each team other than `team` must still
    be asking for: its jobs submitted and too long to have finished."""
    events: list[tuple[float, int, str, int]] = []
    for j in jobs:
        if j.team != team:
            events.append((j.submitted, 1, j.team, j.gpus))
            events.append((j.submitted + j.duration, -1, j.team, j.gpus))
    heapq.heapify(events)
    asking: dict[str, float] = defaultdict(float)
    out: list[dict[str, float]] = []
    for t in times:
        while events and events[0][0] <= t:
            _, sign, other, gpus = heapq.heappop(events)
            asking[other] += sign * gpus
        out.append({k: v for k, v in asking.items() if v > 0})
    return out


def team_bound(
    jobs: Sequence[TraceJob],
    team: str,
    makespan: float,
    capacity: float,
    shares: Mapping[str, float],
) -> TeamBound:
    """`team`'s forced GPU-time above the most it could be entitled to, by `makespan`."""
    forced = [j for j in jobs if j.team == team]
    spans = [(forced_span(j.submitted, j.duration, makespan), j.gpus) for j in forced]
    spans = [(span, gpus) for span, gpus in spans if span[0] < span[1]]
    if not spans:
        return TeamBound(team, 0, 0, 0.0)
    first = min(span[0] for span, _ in spans)
    last = max(span[1] for span, _ in spans)
    times = [first + k * STEP for k in range(int((last - first) // STEP) + 1)]
    excess = 0.0
    for t, others in zip(times, least_demand(jobs, team, times), strict=True):
        held = sum(gpus for (a, b), gpus in spans if a <= t < b)
        if not held:
            continue
        demand = dict(others)
        demand[team] = float("inf")  # asking more only raises what it may be entitled to
        most = water_fill(capacity, demand, shares).get(team, 0.0)
        excess += max(0.0, held - most) * STEP / HOUR
    return TeamBound(team, len(spans), sum(g for _, g in spans), excess)


def window_bound(
    jobs: Sequence[TraceJob], makespan_hours: float, capacity: float, shares: Mapping[str, float]
) -> WindowBound:
    """The bound of every team of `jobs` at `makespan_hours`."""
    teams = sorted({j.team for j in jobs})
    bounds = [team_bound(jobs, t, makespan_hours * HOUR, capacity, shares) for t in teams]
    work = sum(j.gpus * j.duration for j in jobs) / HOUR
    return WindowBound(makespan_hours, work, [b for b in bounds if b.forced_jobs])


def _backfill_makespan(
    jobs: list[TraceJob], args: argparse.Namespace, team_nodes: Mapping[str, int] | None
) -> float:
    replay = replay_window(
        jobs,
        start=args.start,
        hours=args.hours,
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        team_nodes=team_nodes,
        schedulers=[BACKFILL],
    )
    return replay.runs[BACKFILL].makespan_hours


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--start", type=parse_time, required=True)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--nodes", type=int, default=48)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--vc", type=Path, help="nodes per team (vc,node num)")
    parser.add_argument("--cap-hours", type=float, default=24.0)
    parser.add_argument("--makespan", type=float, help="hours (default: FIFO + backfill's)")
    args = parser.parse_args(argv)
    team_nodes = read_team_nodes(args.vc) if args.vc else None
    jobs = read_trace(args.trace, start=args.start, hours=args.hours, cap_hours=args.cap_hours)
    jobs, cluster = trace_slice(jobs, args.nodes, args.gpus_per_node, team_nodes)
    capacity, shares = cluster.gpus, cluster.quotas
    makespan = args.makespan or _backfill_makespan(jobs, args, team_nodes)
    bound = window_bound(jobs, makespan, capacity, shares)
    print(
        f"{args.start:%Y-%m-%d %H:%M}: {len(jobs)} jobs, {bound.work_gpu_hours:,.0f} GPU-h of "
        f"work; ending by {makespan:.1f} h"
        + ("" if args.makespan else " (FIFO + backfill's makespan)")
    )
    for t in bound.teams:
        print(
            f"  team {t.team}: {t.forced_jobs} jobs ({t.forced_gpus} GPUs) must run "
            f"uninterrupted; {t.excess_gpu_hours:,.0f} GPU-h above the most it could be "
            "entitled to"
        )
    print(
        f"fairness deviation of any schedule ending by {makespan:.1f} h: about "
        f"{bound.deviation:.3f} or more ({bound.excess_gpu_hours:,.0f} GPU-h over "
        f"{bound.work_gpu_hours:,.0f})"
    )


if __name__ == "__main__":
    main()
