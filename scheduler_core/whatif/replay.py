"""Figures of a run in the engine's simulation (a scenario, or a trace replayed on its
cluster), and a trace replayed by the engine and by the reference schedulers side by side.
Each run streams: a step's events feed the running figures and are dropped."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler_core.engine.profiles import DEFAULT_PROFILE_FOR_LABS
from scheduler_core.whatif.reference import ReferenceScheduler
from scheduler_core.whatif.run_figures import (
    HOUR,
    RunFigures,
    RunTally,
    figure_rows,
    figures_from_json,
    record_events,
    simulation_tally,
)
from scheduler_core.whatif.scenarios import Scenario, Step, build_simulation, play
from scheduler_core.whatif.traces import (
    TraceCluster,
    TraceJob,
    trace_scenario,
    trace_slice,
    trace_steps,
)

ENGINE = "fairway"
FIFO = "fifo"
BACKFILL = "fifo+backfill"
SCHEDULERS = (ENGINE, FIFO, BACKFILL)
ProgressCallback = Callable[[str, float], None]


def simulate_figures(
    scenario: Scenario,
    *,
    steps: Callable[..., Iterable[Step]] | None = None,
    submitted_at: Mapping[str, float] | None = None,
    on_hour: Callable[[float], None] | None = None,
) -> RunFigures:
    """Run `scenario` in the engine's simulation and return its figures. `steps(scenario,
    sim)` may extend the timeline as the run goes; `submitted_at` gives arrival times that
    fall between steps; `on_hour(hours)` reports each simulated hour done."""
    sim = build_simulation(scenario)
    tally = simulation_tally(sim)
    timeline = scenario.steps if steps is None else steps(scenario, sim)
    reported = 0
    for step, events, _ in play(sim, timeline):
        record_events(tally, sim, events, submitted_at)
        while on_hour is not None and step.at >= (reported + 1) * HOUR:
            reported += 1
            on_hour(reported)
    return tally.figures()


def replay_trace(
    jobs: list[TraceJob],
    cluster: TraceCluster,
    *,
    step_seconds: float = 60.0,
    on_progress: ProgressCallback | None = None,
    schedulers: Iterable[str] = SCHEDULERS,
) -> dict[str, RunFigures]:
    """The trace replayed by the engine (policy quota), FIFO and FIFO with backfill (or
    those of them named in `schedulers`)."""

    def hours(label: str) -> Callable[[float], None] | None:
        return None if on_progress is None else lambda done: on_progress(label, done)

    chosen = set(schedulers)
    runs: dict[str, RunFigures] = {}
    if ENGINE in chosen:
        runs[ENGINE] = simulate_figures(
            trace_scenario("trace", jobs, cluster, step_seconds),
            steps=lambda scenario, sim: trace_steps(scenario, sim, step_seconds),
            submitted_at={job.name: job.submitted for job in jobs},
            on_hour=hours(ENGINE),
        )
    for label, backfill in ((FIFO, False), (BACKFILL, True)):
        if label not in chosen:
            continue
        tally = RunTally(capacity_gpus=cluster.gpus, shares=cluster.quotas)
        ReferenceScheduler(cluster, tally, backfill, step_seconds).replay(jobs, hours(label))
        runs[label] = tally.figures()
    return runs


@dataclass(frozen=True)
class WindowReplay:
    """One window of a trace, replayed."""

    start: datetime
    jobs: int
    too_large: int
    cluster: TraceCluster
    offered_load: float
    runs: dict[str, RunFigures]

    def document(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The window's figures as JSON."""
        return {
            "start": self.start.isoformat(),
            "jobs": self.jobs,
            "left_out_too_large": self.too_large,
            "cluster": {"nodes": self.cluster.nodes, "gpus_per_node": self.cluster.gpus_per_node},
            "offered_load": round(self.offered_load, 3),
            "config": dict(config),
            "quotas": {team: round(q, 4) for team, q in self.cluster.quotas.items()},
            "runs": {label: figures.to_json() for label, figures in self.runs.items()},
        }

    def header(self, step: float, config: Mapping[str, Any], dated: bool) -> str:
        """The line above the table: what was replayed on what."""
        return (
            (f"{self.start:%Y-%m-%d %H:%M}: " if dated else "")
            + f"{self.jobs} jobs on {self.cluster.nodes} nodes x "
            f"{self.cluster.gpus_per_node} GPUs (offered load {self.offered_load:.2f}), "
            f"a cycle every {step:g} s"
            + "".join(f"; {key}={json.dumps(value)}" for key, value in config.items())
            + (f"; {self.too_large} left out (larger than the cluster)" if self.too_large else "")
        )


def trace_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The pool settings a trace is replayed with: `config`, in the lab profile unless it
    names another (engine.profiles)."""
    return {"profile": DEFAULT_PROFILE_FOR_LABS} | dict(config or {})


def replay_window(
    jobs: list[TraceJob],
    *,
    start: datetime,
    hours: float,
    nodes: int | None,
    load: float | None = None,
    gpus_per_node: int = 8,
    config: Mapping[str, Any] | None = None,
    team_nodes: Mapping[str, int] | None = None,
    step_seconds: float = 60.0,
    schedulers: Iterable[str] = SCHEDULERS,
    on_progress: ProgressCallback | None = None,
) -> WindowReplay:
    """Replay the jobs of one window (submitted `start` + 0..`hours`) on `nodes` nodes of
    `gpus_per_node` GPUs, or (nodes None) on the nodes that give them offered load
    `load`; teams deserve GPUs in proportion to `team_nodes` (equally without). Jobs
    larger than the cluster are left out and counted. `config` is read by trace_config.
    A bad `config` raises the scenario loader's ScenarioError."""
    count = nodes or nodes_for_load(jobs, hours, gpus_per_node, load or 1.0)
    fitting, cluster = trace_slice(
        jobs, count, gpus_per_node, team_nodes, config=trace_config(config)
    )
    runs = replay_trace(
        fitting,
        cluster,
        step_seconds=step_seconds,
        on_progress=on_progress,
        schedulers=schedulers,
    )
    return WindowReplay(
        start,
        len(fitting),
        len(jobs) - len(fitting),
        cluster,
        offered_load(fitting, hours, cluster),
        runs,
    )


def stored_figures(runs: Mapping[str, Any]) -> dict[str, RunFigures]:
    """A stored replay's `runs` (WindowReplay.document) as figures, the engine first and
    then the references (PostgreSQL's jsonb keeps no key order)."""
    labels = [label for label in SCHEDULERS if label in runs]
    labels += sorted(label for label in runs if label not in SCHEDULERS)
    return {label: figures_from_json(runs[label]) for label in labels}


def figures_document(runs: Mapping[str, Any]) -> dict[str, Any]:
    """A stored replay's figures side by side, as the command prints them: the
    schedulers, and per figure its label and one value per scheduler."""
    figures = stored_figures(runs)
    return {
        "schedulers": list(figures),
        "rows": [{"figure": label, "values": cells} for label, cells in figure_rows(figures)],
    }


def work_hours(jobs: Iterable[TraceJob]) -> float:
    """The GPU-hours the jobs ask for."""
    return sum(j.gpus * j.duration for j in jobs) / HOUR


def nodes_for_load(jobs: list[TraceJob], hours: float, gpus_per_node: int, load: float) -> int:
    """The nodes (at least one) whose GPUs over `hours` come closest to the jobs'
    GPU-hours divided by `load`: the cluster on which they offer that load."""
    return max(round(work_hours(jobs) / (hours * gpus_per_node * load)), 1)


def offered_load(jobs: list[TraceJob], hours: float, cluster: TraceCluster) -> float:
    """The jobs' GPU-hours over what the cluster's GPUs give in the window."""
    return work_hours(jobs) / (hours * cluster.nodes * cluster.gpus_per_node)
