"""The figures of one run, kept as running aggregates while it goes (bounded by the number
of workloads, never by the number of steps), for the engine's simulation and the
reference schedulers alike.

- makespan: from time 0 (the trace window's start) to the last completion;
- completion time: completion minus submission, mean and 95th percentile;
- queueing delay: first start minus submission, mean per job size (1, 2-8, > 8 GPUs);
- utilisation: GPU-time allocated over capacity x makespan;
- fairness: each team's GPU-time against what it was entitled to. At every moment a
  team is entitled to the cluster's GPUs divided in proportion to its share, never more
  than it asks for (GPUs of its submitted, unfinished jobs), what one cannot use going to
  the others (water-filling; teams without a share split what is left). The deviation is
  half the sum over teams of |share of GPU-time received - share entitled|: the fraction
  of GPU-time that went to the wrong team (0 = perfectly fair);
- lost work: a preemption throws away the run so far; a move restarts the workload's
  pods from zero too (nothing checkpoints), so it throws away the time since it last
  (re)started or moved. Lost fraction: lost GPU-time over the jobs' GPU-time asked
  (GPUs x duration);
- timeline: every hour, the GPUs in use, the GPUs asked by jobs still waiting, and the
  GPU-hours lost so far (bounded by the hours, not the steps), for pictures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from scheduler_core.engine.simulation import SimEvent, Simulation
from scheduler_core.engine.snapshot import WorkloadSpec

SIZE_CLASSES = ("1", "2-8", ">8")
HOUR = 3600.0


def size_class(gpus: float) -> str:
    """The job-size column a job's queueing delay is reported in."""
    if gpus <= 1:
        return "1"
    return "2-8" if gpus <= 8 else ">8"


def water_fill(
    capacity: float, demand: Mapping[str, float], shares: Mapping[str, float]
) -> dict[str, float]:
    """Divide `capacity` among teams in proportion to `shares`, none above its `demand`,
    what a team cannot use going to the others; teams with no share split what is left
    after all the others are served, equally."""
    fair = {team: 0.0 for team in demand}
    left = capacity
    for weight in (lambda t: shares.get(t, 0.0), lambda t: 1.0):
        asking = {t for t, d in demand.items() if d - fair[t] > 1e-9 and weight(t) > 0}
        while left > 1e-9 and asking:
            total = sum(weight(t) for t in asking)
            offer = {t: left * weight(t) / total for t in asking}
            satisfied = {t for t in asking if demand[t] - fair[t] <= offer[t]}
            if not satisfied:
                for t in asking:
                    fair[t] += offer[t]
                left = 0.0
                break
            for t in satisfied:
                left -= demand[t] - fair[t]
                fair[t] = demand[t]
            asking -= satisfied
    return fair


@dataclass(slots=True)
class _Job:
    team: str
    gpus: float
    submitted: float
    first_start: float | None = None
    run_start: float | None = None
    running_gpus: float = 0.0
    preemptions: int = 0


@dataclass(slots=True)
class TeamFigures:
    """A team's GPU-time received and entitled (hours), and their shares of the totals."""

    gpu_hours: float
    entitled_hours: float
    share: float
    entitled_share: float


@dataclass(slots=True)
class RunFigures:
    """The figures of one run (see the module docstring); times in hours."""

    jobs: int
    completed: int
    unfinished: int
    makespan_hours: float
    mean_completion_hours: float
    p95_completion_hours: float
    mean_queueing_minutes: dict[str, float | None]
    utilisation: float
    teams: dict[str, TeamFigures]
    fairness_deviation: float
    preemptions: int
    moves: int
    jobs_preempted_more_than_twice: int
    most_preemptions_of_one_job: int
    lost_gpu_hours_preemptions: float
    lost_gpu_hours_moves: float
    lost_gpu_hours: float
    lost_fraction: float
    timeline: dict[str, list[float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, figures rounded to 4 decimals."""
        return _rounded(asdict(self))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@dataclass(slots=True)
class RunTally:
    """Running aggregates of one run. Calls come in time order: `submit`, `start`,
    `resize`, `move`, `preempt`, `finish`; `figures()` summarises at any point."""

    capacity_gpus: float
    shares: Mapping[str, float]
    _jobs: dict[str, _Job] = field(default_factory=dict)
    _clock: float = 0.0
    _allocated: dict[str, float] = field(default_factory=dict)
    _demand: dict[str, float] = field(default_factory=dict)
    _fair: dict[str, float] | None = None
    _gpu_seconds: dict[str, float] = field(default_factory=dict)
    _entitled_seconds: dict[str, float] = field(default_factory=dict)
    _completions: list[float] = field(default_factory=list)
    _delays: dict[str, tuple[float, int]] = field(default_factory=dict)  # sum, count
    _submitted: int = 0
    _finished: int = 0
    _last_finish: float = 0.0
    _work_seconds: float = 0.0
    _preemptions: int = 0
    _moves: int = 0
    _preemption_counts: dict[str, int] = field(default_factory=dict)
    _lost_preempted: float = 0.0
    _lost_moved: float = 0.0
    # (hour, GPUs in use, GPUs waiting, GPU-seconds lost so far), one per hour passed
    _samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    _next_sample: float = 0.0

    def submit(self, at: float, job: str, team: str, gpus: float, duration: float | None) -> None:
        """A job arrives asking `gpus` to run `duration` seconds."""
        self._advance(at)
        self._jobs[job] = _Job(team, gpus, at)
        self._submitted += 1
        self._work_seconds += gpus * (duration or 0.0)
        self._change(self._demand, team, gpus)
        self._fair = None

    def start(self, at: float, job: str, gpus: float) -> None:
        """The job starts (again) on `gpus` GPUs."""
        self._advance(at)
        j = self._jobs[job]
        if j.first_start is None:
            j.first_start = at
            size = size_class(j.gpus)
            total, count = self._delays.get(size, (0.0, 0))
            self._delays[size] = (total + at - j.submitted, count + 1)
        j.run_start = at
        self._set_running(j, gpus)

    def resize(self, at: float, job: str, gpus: float) -> None:
        """An elastic job now runs on `gpus` GPUs."""
        self._advance(at)
        self._set_running(self._jobs[job], gpus)

    def move(self, at: float, job: str) -> None:
        """The job's pods are placed elsewhere: they restart, losing their run so far."""
        self._advance(at)
        j = self._jobs[job]
        self._moves += 1
        if j.run_start is not None:
            self._lost_moved += j.running_gpus * (at - j.run_start)
            j.run_start = at

    def preempt(self, at: float, job: str) -> None:
        """The job is evicted and waits again: its run so far is lost."""
        self._advance(at)
        j = self._jobs[job]
        self._preemptions += 1
        self._preemption_counts[job] = self._preemption_counts.get(job, 0) + 1
        if j.run_start is not None:
            self._lost_preempted += j.running_gpus * (at - j.run_start)
        j.run_start = None
        self._set_running(j, 0.0)

    def stop(self, at: float, job: str) -> None:
        """The job's own command failed and it waits to run again: not the scheduler's
        doing, so neither a preemption nor lost work."""
        self._advance(at)
        j = self._jobs[job]
        j.run_start = None
        self._set_running(j, 0.0)

    def finish(self, at: float, job: str, *, completed: bool = True) -> None:
        """The job leaves: completed (counted in completion times) or failed/deleted."""
        self._advance(at)
        j = self._jobs.pop(job)
        self._set_running(j, 0.0)
        self._change(self._demand, j.team, -j.gpus)
        self._fair = None
        self._finished += 1
        if completed:
            self._completions.append(at - j.submitted)
            self._last_finish = max(self._last_finish, at)

    # ------------------------------------------------------------ accounting
    def _set_running(self, j: _Job, gpus: float) -> None:
        self._change(self._allocated, j.team, gpus - j.running_gpus)
        j.running_gpus = gpus

    @staticmethod
    def _change(table: dict[str, float], team: str, delta: float) -> None:
        table[team] = table.get(team, 0.0) + delta

    def _state(self, hour: float) -> tuple[float, float, float, float]:
        in_use = sum(self._allocated.values())
        waiting = max(sum(self._demand.values()) - in_use, 0.0)
        return (hour, in_use, waiting, self._lost_preempted + self._lost_moved)

    def _advance(self, at: float) -> None:
        while self._next_sample < at:  # the state from the clock until `at` holds then
            self._samples.append(self._state(self._next_sample / HOUR))
            self._next_sample += HOUR
        span = at - self._clock
        if span <= 0:
            return
        if self._fair is None:
            self._fair = water_fill(self.capacity_gpus, self._demand, self.shares)
        for team, gpus in self._allocated.items():
            self._change(self._gpu_seconds, team, gpus * span)
        for team, gpus in self._fair.items():
            self._change(self._entitled_seconds, team, gpus * span)
        self._clock = at

    # ------------------------------------------------------------ summary
    def _mean_delay_minutes(self, size: str) -> float | None:
        total, count = self._delays.get(size, (0.0, 0))
        return total / count / 60 if count else None

    def figures(self) -> RunFigures:
        """The run's figures so far."""
        completions = sorted(self._completions)
        makespan = self._last_finish
        used = sum(self._gpu_seconds.values())
        entitled = sum(self._entitled_seconds.values())
        teams = {
            team: TeamFigures(
                gpu_hours=self._gpu_seconds.get(team, 0.0) / HOUR,
                entitled_hours=self._entitled_seconds.get(team, 0.0) / HOUR,
                share=_part(self._gpu_seconds.get(team, 0.0), used),
                entitled_share=_part(self._entitled_seconds.get(team, 0.0), entitled),
            )
            for team in sorted(set(self._gpu_seconds) | set(self._entitled_seconds))
        }
        counts = self._preemption_counts.values()
        lost = self._lost_preempted + self._lost_moved
        return RunFigures(
            jobs=self._submitted,
            completed=len(completions),
            unfinished=self._submitted - self._finished,
            makespan_hours=makespan / HOUR,
            mean_completion_hours=_mean(completions) / HOUR,
            p95_completion_hours=_percentile(completions, 0.95) / HOUR,
            mean_queueing_minutes={size: self._mean_delay_minutes(size) for size in SIZE_CLASSES},
            utilisation=_part(used, self.capacity_gpus * makespan),
            teams=teams,
            fairness_deviation=sum(abs(t.share - t.entitled_share) for t in teams.values()) / 2,
            preemptions=self._preemptions,
            moves=self._moves,
            jobs_preempted_more_than_twice=sum(1 for n in counts if n > 2),
            most_preemptions_of_one_job=max(counts, default=0),
            lost_gpu_hours_preemptions=self._lost_preempted / HOUR,
            lost_gpu_hours_moves=self._lost_moved / HOUR,
            lost_gpu_hours=lost / HOUR,
            lost_fraction=_part(lost, self._work_seconds),
            timeline=self._timeline(),
        )

    def _timeline(self) -> dict[str, list[float]]:
        """The hourly samples, and the state at the last event."""
        samples = [*self._samples, self._state(self._clock / HOUR)]
        return {
            "hours": [s[0] for s in samples],
            "gpus_in_use": [s[1] for s in samples],
            "gpus_waiting": [s[2] for s in samples],
            "lost_gpu_hours": [s[3] / HOUR for s in samples],
        }


def _part(x: float, whole: float) -> float:
    return x / whole if whole > 0 else 0.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted values (0 when there are none)."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# ---------------------------------------------------------------- the engine's simulation
def workload_gpus(w: WorkloadSpec) -> float:
    """GPUs a workload holds now, or asks for when it holds none."""
    if w.pods:
        per_group = {g.name: g.request.gpus for g in w.groups}
        return sum(per_group[p.group] for p in w.pods)
    return sum(g.pods * g.request.gpus for g in w.groups)


def simulation_shares(sim: Simulation) -> dict[str, float]:
    """Each project's deserved GPUs over all pools (its share of the cluster)."""
    parents = {q.parent for q in sim.queues.values() if q.parent}
    return {
        q.name: sum(r.gpus for r in q.quota.values() if math.isfinite(r.gpus))
        for q in sim.queues.values()
        if q.name not in parents
    }


def simulation_tally(sim: Simulation) -> RunTally:
    """A tally for `sim`, with the workloads it already holds."""
    capacity = sum(n.gpus for n in sim.nodes.values())
    tally = RunTally(capacity_gpus=capacity, shares=simulation_shares(sim))
    for w in sorted(sim.active.values(), key=lambda w: w.creation_order):
        tally.submit(sim.now, w.id, w.project, workload_gpus(w), sim.durations.get(w.id))
        if w.pods:
            tally.start(sim.now, w.id, workload_gpus(w))
    return tally


def record_events(
    tally: RunTally,
    sim: Simulation,
    events: Iterable[SimEvent],
    submitted_at: Mapping[str, float] | None = None,
) -> None:
    """Feed a step's events to `tally`; `submitted_at` gives arrival times that fall
    between steps (a trace), else a workload arrives when its event says."""
    for e in events:
        w = sim.active.get(e.workload)
        if e.type == "submitted" and w is not None:
            at = (submitted_at or {}).get(e.workload, e.at)
            tally.submit(at, w.id, w.project, workload_gpus(w), sim.durations.get(w.id))
        elif e.type == "allocated":
            tally.start(e.at, e.workload, workload_gpus(w) if w else 0.0)
        elif e.type in ("shrunk", "expanded") and w is not None:
            tally.resize(e.at, e.workload, workload_gpus(w))
        elif e.type == "moved":
            tally.move(e.at, e.workload)
        elif e.type == "preempted":
            tally.preempt(e.at, e.workload)
        elif e.type == "run_failed":
            tally.stop(e.at, e.workload)
        elif e.type in ("completed", "failed", "deleted"):
            tally.finish(e.at, e.workload, completed=e.type == "completed")


# ---------------------------------------------------------------- printing
Cell = Callable[[RunFigures], str]
ROWS: tuple[tuple[str, Cell], ...] = (
    ("jobs completed / unfinished", lambda r: f"{r.completed} / {r.unfinished}"),
    ("makespan (h)", lambda r: f"{r.makespan_hours:.1f}"),
    ("completion time, mean (h)", lambda r: f"{r.mean_completion_hours:.2f}"),
    ("completion time, p95 (h)", lambda r: f"{r.p95_completion_hours:.2f}"),
    *(
        (f"queueing, mean, {size} GPU (min)", lambda r, size=size: _minutes(r, size))
        for size in SIZE_CLASSES
    ),
    ("GPU utilisation", lambda r: f"{r.utilisation:.1%}"),
    ("fairness deviation", lambda r: f"{r.fairness_deviation:.3f}"),
    ("preemptions", lambda r: str(r.preemptions)),
    (
        "jobs preempted > 2 times (most)",
        lambda r: f"{r.jobs_preempted_more_than_twice} ({r.most_preemptions_of_one_job})",
    ),
    ("moves", lambda r: str(r.moves)),
    ("lost GPU-h, preemptions", lambda r: f"{r.lost_gpu_hours_preemptions:.1f}"),
    ("lost GPU-h, moves", lambda r: f"{r.lost_gpu_hours_moves:.1f}"),
    ("lost GPU-h (% of work)", lambda r: f"{r.lost_gpu_hours:.1f} ({r.lost_fraction:.1%})"),
)


def figure_rows(runs: Mapping[str, RunFigures]) -> list[tuple[str, list[str]]]:
    """The runs' figures side by side: (what, one cell per run), then each team's
    GPU-hours received and entitled."""
    rows = list(ROWS)
    for team in sorted({t for r in runs.values() for t in r.teams}):
        rows.append((f"team {team}: GPU-h / entitled", partial(_team, name=team)))
    return [(label, [cell(r) for r in runs.values()]) for label, cell in rows]


def figures_table(runs: Mapping[str, RunFigures]) -> list[str]:
    """The runs side by side as text, one figure per line (figure_rows)."""
    return text_table([["", *runs], *([label, *cells] for label, cells in figure_rows(runs))])


def text_table(table: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as aligned text: the first column to the left, the others right."""
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
            for i, cell in enumerate(line)
        ).rstrip()
        for line in table
    ]


def figures_from_json(data: Mapping[str, Any]) -> RunFigures:
    """RunFigures from its JSON (to_json), as a stored result keeps it."""
    teams = {name: TeamFigures(**team) for name, team in (data.get("teams") or {}).items()}
    return RunFigures(**{**data, "teams": teams})


def _minutes(r: RunFigures, size: str) -> str:
    minutes = r.mean_queueing_minutes[size]
    return "-" if minutes is None else f"{minutes:.1f}"


def _team(r: RunFigures, name: str) -> str:
    team = r.teams.get(name)
    return "-" if team is None else f"{team.gpu_hours:.0f} / {team.entitled_hours:.0f}"
