"""Long runs stream: a step's output is dropped once printed, and the usage history of
time-based fairshare keeps only its window."""

from __future__ import annotations

import json
import tracemalloc

from scheduler_core.whatif.scenarios import build_simulation, parse_scenario, play, run_scenario


def long_scenario(steps: int) -> dict:
    """Four workloads that hold the cluster, and `steps` steps (one a minute) of nothing."""
    return {
        "name": "long",
        "nodes": [{"name": "n", "count": 2, "pool": "default", "gpus": 8}],
        "projects": [{"name": "p", "quota": {"default": {"gpus": 8}}}, {"name": "q"}],
        "workloads": [{"name": f"w{i}", "project": "pq"[i % 2], "gpus": 4} for i in range(4)],
        "steps": [{"at": i * 60} for i in range(steps)],
    }


def streamed_peak(steps: int) -> int:
    """Peak memory allocated while the scenario runs, each step printed and dropped."""
    scenario = parse_scenario(long_scenario(steps), "long")
    tracemalloc.start()
    run = run_scenario(scenario, on_step=lambda step: json.dumps(step.to_json()))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert run.steps == steps and not run.failures
    return peak


def test_a_streamed_run_keeps_no_step_history() -> None:
    streamed_peak(10)  # what a first run allocates once (lazy imports, caches) is not history
    assert streamed_peak(1000) < streamed_peak(100) * 1.5


def test_time_based_usage_keeps_only_its_window() -> None:
    document = long_scenario(200)
    document["config"] = {"fairshare_mode": "time_based", "time_based": {"window": 600}}
    scenario = parse_scenario(document, "long")
    sim = build_simulation(scenario)
    for _ in play(sim, scenario.steps):
        assert all(r.end >= sim.now - 600 for r in sim.usage)
    # two queues, a record each per minute of the window (and the one it started in)
    assert 0 < len(sim.usage) <= 2 * 11
