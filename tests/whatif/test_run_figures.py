"""The figures of a run: completion and queueing times, utilisation, fairness against
each team's entitled share, preemptions, moves and the work they throw away."""

from __future__ import annotations

import pytest

from scheduler_core.whatif.run_figures import RunTally, figures_table, size_class, water_fill


def test_entitlement_follows_shares_and_what_teams_can_use() -> None:
    # b asks for less than its half: a gets the rest
    assert water_fill(8, {"a": 8, "b": 2}, {"a": 1, "b": 1}) == {"a": 6, "b": 2}
    assert water_fill(8, {"a": 8, "b": 8}, {"a": 3, "b": 1}) == {"a": 6, "b": 2}
    # a team without a share gets what the others leave
    assert water_fill(8, {"a": 5, "z": 8}, {"a": 1}) == {"a": 5, "z": 3}
    assert water_fill(8, {"a": 8, "z": 8}, {"a": 1}) == {"a": 8, "z": 0}


@pytest.mark.parametrize(("gpus", "size"), [(1, "1"), (2, "2-8"), (8, "2-8"), (16, ">8")])
def test_job_sizes(gpus: int, size: str) -> None:
    assert size_class(gpus) == size


def test_a_fair_run_deviates_by_nothing() -> None:
    tally = RunTally(capacity_gpus=4, shares={"a": 1, "b": 1})
    for team in ("a", "b"):
        tally.submit(0, team, team, 2, 100)
        tally.start(0, team, 2)
    tally.finish(100, "a")
    tally.finish(100, "b")
    figures = tally.figures()
    assert figures.fairness_deviation == 0
    assert figures.utilisation == 1
    assert figures.teams["a"].gpu_hours == figures.teams["a"].entitled_hours == 200 / 3600


def test_a_team_that_runs_alone_while_both_ask_takes_the_other_s_share() -> None:
    tally = RunTally(capacity_gpus=4, shares={"a": 1, "b": 1})
    tally.submit(0, "a1", "a", 4, 100)
    tally.submit(0, "b1", "b", 4, 100)
    tally.start(0, "a1", 4)
    tally.finish(100, "a1")
    tally.start(100, "b1", 4)
    tally.finish(200, "b1")
    figures = tally.figures()
    # entitled: 2 + 2 GPUs while both ask, then b alone 4; received: a 400, b 400 GPU-s
    assert figures.teams["a"].entitled_share == pytest.approx(200 / 800)
    assert figures.teams["a"].share == pytest.approx(0.5)
    assert figures.fairness_deviation == pytest.approx(0.25)
    assert figures.makespan_hours * 3600 == 200
    assert figures.mean_completion_hours * 3600 == 150
    assert figures.p95_completion_hours * 3600 == 200
    assert figures.mean_queueing_minutes == {"1": None, "2-8": 50 / 60, ">8": None}


def test_preemptions_and_moves_throw_away_the_run_since_the_last_restart() -> None:
    tally = RunTally(capacity_gpus=8, shares={"a": 1})
    tally.submit(0, "j", "a", 2, 1000)
    tally.start(0, "j", 2)
    tally.move(300, "j")  # restarts from zero: 2 GPUs x 300 s lost
    tally.preempt(500, "j")  # 2 x 200 s since the move
    tally.start(600, "j", 2)
    tally.preempt(700, "j")
    tally.start(800, "j", 2)
    tally.preempt(900, "j")
    tally.start(1000, "j", 2)
    tally.finish(2000, "j")
    figures = tally.figures()
    assert figures.moves == 1
    assert figures.preemptions == 3
    assert figures.jobs_preempted_more_than_twice == 1
    assert figures.most_preemptions_of_one_job == 3
    assert figures.lost_gpu_hours_moves * 3600 == 600
    assert figures.lost_gpu_hours_preemptions * 3600 == 400 + 200 + 200
    assert figures.lost_fraction == pytest.approx(1400 / 2000)
    assert figures.mean_queueing_minutes["2-8"] == 0  # the first start counts


def test_unfinished_jobs_are_counted_apart() -> None:
    tally = RunTally(capacity_gpus=8, shares={"a": 1})
    tally.submit(0, "j", "a", 1, None)
    tally.start(0, "j", 1)
    figures = tally.figures()
    assert (figures.completed, figures.unfinished, figures.makespan_hours) == (0, 1, 0)


def test_the_table_puts_runs_side_by_side() -> None:
    tally = RunTally(capacity_gpus=4, shares={"a": 1})
    tally.submit(0, "j", "a", 4, 3600)
    tally.start(0, "j", 4)
    tally.finish(3600, "j")
    lines = figures_table({"fairway": tally.figures(), "fifo": tally.figures()})
    assert lines[0].split() == ["fairway", "fifo"]
    assert lines[2].split() == ["makespan", "(h)", "1.0", "1.0"]
    assert lines[-1].split() == [
        "team",
        "a:",
        "GPU-h",
        "/",
        "entitled",
        "4",
        "/",
        "4",
        "4",
        "/",
        "4",
    ]
