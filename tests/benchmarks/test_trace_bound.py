"""The trace bound: what a schedule that ends by a makespan cannot avoid."""

from __future__ import annotations

from benchmarks.trace_bound import forced_span, window_bound
from scheduler_core.whatif.traces import TraceJob

HOUR = 3600.0


def test_a_long_job_must_run_through_its_forced_span() -> None:
    # submitted at 1 h, runs 10 h, the window must end by 12 h: it starts by 2 h at the
    # latest, so it runs at least from 2 h to 11 h
    assert forced_span(1 * HOUR, 10 * HOUR, 12 * HOUR) == (2 * HOUR, 11 * HOUR)
    # a short job need not run at any given time
    start, end = forced_span(1 * HOUR, 1 * HOUR, 12 * HOUR)
    assert start >= end


def test_a_team_holding_long_runs_above_its_share_makes_any_schedule_unfair() -> None:
    # 8 GPUs shared equally by a and b. a's four 2-GPU jobs of 10 h arrive first; b's
    # eight 1-GPU jobs of 2 h arrive at 1 h. Ending by 10.5 h, a's jobs run from 0.5 h to
    # 10 h on all 8 GPUs, while from 1 h to 3 h b's jobs (which cannot have finished)
    # ask for 8: a may have 4 then, so 4 GPUs x 2 h = 8 GPU-hours went to the wrong team,
    # over 96 of work
    jobs = [TraceJob(f"a{i}", "a", 0.0, 10 * HOUR, 2) for i in range(4)]
    jobs += [TraceJob(f"b{i}", "b", 1 * HOUR, 2 * HOUR, 1) for i in range(8)]
    bound = window_bound(jobs, 10.5, 8.0, {"a": 0.5, "b": 0.5})
    assert [t.team for t in bound.teams if t.excess_gpu_hours > 0] == ["a"]
    assert round(bound.excess_gpu_hours) == 8
    assert round(bound.deviation, 3) == round(8 / 96, 3)


def test_no_bound_when_the_makespan_leaves_room() -> None:
    jobs = [TraceJob("a0", "a", 0.0, 1 * HOUR, 8), TraceJob("b0", "b", 0.0, 1 * HOUR, 8)]
    assert window_bound(jobs, 48.0, 8.0, {"a": 0.5, "b": 0.5}).deviation == 0.0
