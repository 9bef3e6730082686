"""The Slurm benchmark's start-latency split (benchmarks.slurm_vs_fairway.latency)."""

from __future__ import annotations

from datetime import datetime

from benchmarks.slurm_vs_fairway.latency import allocations, launch_latency, release_split


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_allocations_come_from_both_schedulers_lines_since_the_run_began(tmp_path):
    log = tmp_path / "slurmctld.log"
    log.write_text(
        "[2026-11-28T22:13:00.100] sched: Allocate JobId=7 NodeList=fw1 #CPUs=1 Partition=p\n"
        "[2026-11-28T22:13:47.089] sched: Allocate JobId=19 NodeList=fw2 #CPUs=1 Partition=p\n"
        "[2026-11-28T22:13:47.500] _job_complete: JobId=14 done\n"
        "[2026-11-28T22:13:48.730] sched/backfill: _start_job: Started JobId=18 in p on fw1\n"
        "[2026-11-28T22:14:02.000] sched: Allocate JobId=19 NodeList=fw3 #CPUs=1 Partition=p\n"
    )
    found = allocations(log, since=_at("2026-11-28T22:13:30"))
    assert set(found) == {18, 19}  # job 7 is of an earlier run
    assert found[19] == [_at("2026-11-28T22:13:47.089"), _at("2026-11-28T22:14:02")]
    assert allocations(tmp_path / "missing.log", since=0) == {}


def test_a_release_splits_into_slurms_scheduling_and_its_launch():
    released = [(19, 100.0), (20, 200.0)]
    allocated = {19: [100.25], 20: [200.5]}
    began = {19: [101.5], 20: [201.0]}
    text = release_split(released, allocated, began)
    assert text.startswith("release to process start p50 1.25 s")  # of 1.5 and 1.0
    assert "release to allocation 0.38 s" in text  # median of 0.25 and 0.5
    assert "allocation to process 0.88 s" in text  # median of 1.25 and 0.5
    assert launch_latency(allocated, began).startswith("0.88 s")
