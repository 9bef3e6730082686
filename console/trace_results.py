"""A trace run's result for the page: what was replayed, the schedulers' figures side by
side, an outcome in plain words, and per scheduler a chart of the GPUs in use and asked
for by waiting jobs, hour by hour (scheduler_core.whatif.trace_runs stores the result)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.charts import Series, stacked_area
from scheduler_core.whatif.replay import BACKFILL, ENGINE, FIFO, stored_figures
from scheduler_core.whatif.run_figures import RunFigures, figure_rows, figures_from_json

TITLES = {ENGINE: "Fairway", FIFO: "FIFO", BACKFILL: "FIFO with backfill"}
IN_USE, WAITING = "var(--p0)", "var(--p2)"


def trace_context(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the page shows of a succeeded trace run's `result`."""
    figures = stored_figures(result["runs"])
    cluster = result.get("cluster") or {}
    capacity = cluster.get("nodes", 0) * cluster.get("gpus_per_node", 0)
    scale = shared_scale(figures.values())
    return {
        "header": result.get("header", ""),
        "titles": [TITLES.get(label, label) for label in figures],
        "rows": figure_rows(figures),
        "summary": outcome_text(figures),
        "charts": [
            {"title": TITLES.get(label, label), "svg": timeline_chart(f, capacity, scale)}
            for label, f in figures.items()
        ],
    }


def trace_options_text(options: Mapping[str, Any]) -> str:
    """What a trace run replays, from its stored options: "24 h of it from
    2017-10-25T19:00 UTC on 48 nodes x 8 GPUs · reserve_for_gangs=true", with a
    multiplication sign; "" for a run of another source."""
    if not options:
        return ""
    size = (
        f"{options['nodes']} nodes"
        if options.get("nodes")
        else f"the nodes for load {options.get('load')}"
    )
    settings = ", ".join(
        f"{key}={json.dumps(value)}" for key, value in (options.get("config") or {}).items()
    )
    gpus = options["gpus_per_node"]
    text = f"{options['hours']:g} h of it from {options['start']} UTC on {size} \u00d7 {gpus} GPUs"
    return f"{text} · {settings}" if settings else text


def trace_comparison(named: Sequence[tuple[str, Mapping[str, Any] | None]]) -> dict[str, Any]:
    """Two trace runs' engine figures side by side (`named`: each run's name and result,
    empty or None while it has none), and what changes from the first to the second in words."""
    engines = {
        name: figures_from_json(result["runs"][ENGINE])
        for name, result in named
        if result and ENGINE in (result.get("runs") or {})
    }
    if len(engines) < 2:
        return {"titles": list(engines), "rows": figure_rows(engines), "summary": ""}
    (first, a), (second, b) = engines.items()
    changes = [
        f"makespan from {a.makespan_hours:.1f} to {b.makespan_hours:.1f} h",
        f"fairness deviation from {a.fairness_deviation:.3f} to {b.fairness_deviation:.3f}",
        f"work thrown away from {a.lost_fraction:.1%} to {b.lost_fraction:.1%}",
        f"preemptions from {a.preemptions} to {b.preemptions}",
    ]
    return {
        "titles": [first, second],
        "rows": figure_rows(engines),
        "summary": f"In {second}, compared with {first}, Fairway's " + ", ".join(changes) + ".",
    }


@dataclass(frozen=True)
class ChartScale:
    """What the charts of one page share: the hours on the x axis (the longest run's) and
    the top of the y axis (the most GPUs any run had in use and asked for at once)."""

    hours: list[float]
    y_top: float


def shared_scale(runs: Iterable[RunFigures]) -> ChartScale:
    """One scale for the charts of `runs`, so that they compare at a glance."""
    hours: list[float] = []
    y_top = 0.0
    for figures in runs:
        timeline = figures.timeline or {}
        if len(timeline.get("hours") or []) > len(hours):
            hours = list(timeline["hours"])
        pairs = zip(
            timeline.get("gpus_in_use") or [], timeline.get("gpus_waiting") or [], strict=False
        )
        y_top = max([y_top, *(used + waiting for used, waiting in pairs)])
    return ChartScale(hours=hours, y_top=y_top)


def timeline_chart(figures: RunFigures, capacity: float, scale: ChartScale | None = None) -> str:
    """GPUs in use and GPUs asked for by waiting jobs, stacked, hour by hour, on `scale`
    (a run that ended earlier than the longest holds nothing after its end)."""
    timeline = figures.timeline or {}
    hours = scale.hours if scale else list(timeline.get("hours") or [])

    def padded(key: str) -> list[float]:
        values = list(timeline.get(key) or [])
        return values + [0.0] * (len(hours) - len(values))

    series = [
        Series("GPUs in use", IN_USE, padded("gpus_in_use")),
        Series("GPUs asked by waiting jobs", WAITING, padded("gpus_waiting")),
    ]
    return stacked_area(
        [f"{round(h, 1):g} h" for h in hours],
        series,
        capacity=capacity or None,
        height=200,
        x_title="hours since the window opened",
        y_top=scale.y_top if scale else 0.0,
    )


def outcome_text(figures: Mapping[str, RunFigures]) -> str:
    """The engine against the reference schedulers in one or two sentences."""
    engine = figures.get(ENGINE)
    if engine is None:
        return ""
    others = [(TITLES[label], figures[label]) for label in (FIFO, BACKFILL) if label in figures]

    def against(value: str, pick: Any) -> str:
        if not others:
            return value
        return f"{value} ({'; '.join(f'{title} {pick(f)}' for title, f in others)})"

    ran = f"the window's {engine.jobs:,} jobs"
    if engine.unfinished:
        ran = (
            f"{engine.completed:,} of the window's {engine.jobs:,} jobs "
            f"({engine.unfinished:,} never ended)"
        )
    return (
        f"Fairway ran {ran} to their end in "
        + against(f"{engine.makespan_hours:.1f} h", lambda f: f"{f.makespan_hours:.1f} h")
        + ", with a fairness deviation of "
        + against(f"{engine.fairness_deviation:.3f}", lambda f: f"{f.fairness_deviation:.3f}")
        + f". Its {engine.preemptions} preemptions and {engine.moves} moves threw away "
        f"{engine.lost_gpu_hours:,.0f} GPU-hours, {engine.lost_fraction:.1%} of the work"
        + (
            f"; {_jobs(engine.jobs_preempted_more_than_twice)} preempted more than twice"
            if engine.jobs_preempted_more_than_twice
            else ""
        )
        + "."
    )


def _jobs(count: int) -> str:
    return f"{count} job was" if count == 1 else f"{count} jobs were"
