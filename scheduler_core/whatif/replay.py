"""Figures of a run in the engine's simulation (a scenario, or a trace replayed on its
cluster), and a trace replayed by the engine and by the reference schedulers side by side.
Each run streams: a step's events feed the running figures and are dropped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from scheduler_core.whatif.reference import ReferenceScheduler
from scheduler_core.whatif.run_figures import (
    HOUR,
    RunFigures,
    RunTally,
    record_events,
    simulation_tally,
)
from scheduler_core.whatif.scenarios import Scenario, Step, build_simulation, play
from scheduler_core.whatif.traces import TraceCluster, TraceJob, trace_scenario, trace_steps

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
