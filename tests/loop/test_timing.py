"""When the scheduling loop starts its next cycle (scheduler_core.loop.timing)."""

from __future__ import annotations

import pytest

from scheduler_core.loop.timing import run_weight, start_delay


def delay(ends, cycle=0.5, request_gpus=None, horizon=1.0):
    return start_delay(ends, cycle=cycle, request_gpus=request_gpus, horizon=horizon)


def test_with_nothing_free_and_no_request_it_sleeps_until_the_first_run_ends():
    assert delay([(0.3, 8), (0.2, 1)]) == 0.2
    assert delay([(1.5, 8)]) is None  # beyond the horizon: the beat covers it
    assert delay([]) is None


def test_freed_gpus_are_refilled_at_once_when_no_run_ends_within_a_cycle():
    assert delay([(-0.1, 8), (0.6, 8)]) == 0


def test_it_waits_a_moment_for_a_bigger_run_ending_within_the_cycle():
    # 225 GPUs free for 0.25 s already; 375 more in 0.05 s. Starting now leaves those
    # idle until the next cycle (0.4 s); waiting leaves the 225 idle 0.05 s longer.
    assert delay([(-0.25, 225), (0.05, 375)], cycle=0.45) == pytest.approx(0.05)


def test_it_starts_now_when_waiting_would_idle_more_than_it_saves():
    assert delay([(-0.25, 375), (0.3, 225)], cycle=0.45) == 0


def test_it_never_waits_longer_than_one_cycle():
    assert delay([(-0.1, 1), (0.6, 600)], cycle=0.5) == 0


def test_a_request_runs_at_once_while_gpus_are_idle():
    assert delay([(0.3, 8)], request_gpus=16) == 0


def test_a_request_on_a_full_cluster_waits_for_a_run_ending_within_the_cycle():
    assert delay([(0.3, 8)], request_gpus=0) == pytest.approx(0.3)
    assert delay([(0.7, 8)], request_gpus=0) == 0  # nothing ends within a cycle


def test_of_equal_choices_it_takes_the_earliest():
    assert delay([(-0.1, 4), (0.25, 4)], cycle=0.5) == 0


def test_a_run_without_gpus_still_counts():
    assert run_weight(0) == 1
    assert run_weight(8) == 8
