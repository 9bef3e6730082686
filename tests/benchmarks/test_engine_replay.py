"""The engine benchmark's replay of Kueue's baseline reports a makespan only when every
workload finished: a replay cut short by its limit says so instead of passing its last
completion off as the drain."""

from __future__ import annotations

import math

from benchmarks.engine_bench import replay_kueue_baseline


def test_a_replay_cut_short_has_no_makespan_and_no_usage():
    report = replay_kueue_baseline(limit_seconds=2.0)

    assert report.makespan == math.inf
    assert report.utilisation == 0.0
    assert report.per_project_usage == {}
