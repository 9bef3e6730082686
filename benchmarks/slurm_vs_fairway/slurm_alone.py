"""Side 1: Slurm alone, as a lab would set it up for fair sharing between teams. Each
job is submitted at its (compressed) arrival time to its team's account with its time
limit (the compressed duration rounded up to whole minutes, plus one: Slurm's limits are
minutes), and Slurm's multifactor fair-share and backfill decide."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.slurm_vs_fairway.cluster import PARTITION, account
from benchmarks.slurm_vs_fairway.stamps import Submitted, job_command
from scheduler_core.runtime.executors.slurm.client import JobRequest, SlurmClient
from scheduler_core.whatif.traces import TraceJob, pod_shape


def time_limit_minutes(seconds: float) -> int:
    """The job's time limit: its duration rounded up to minutes, plus one."""
    return math.ceil(seconds / 60) + 1


def request(job: TraceJob, seconds: float, stamp: Path, gpus_per_node: int) -> JobRequest:
    """The sbatch request of one replayed job: its pods as nodes of one job."""
    pods, per_pod = pod_shape(job.gpus, gpus_per_node)
    options = [
        "-p", PARTITION, "-A", account(job.team), "-J", job.name, "-o", "/dev/null",
        "-N", str(pods), "--ntasks-per-node=1", f"--gres=gpu:{per_pod}",
        "-t", str(time_limit_minutes(seconds)),
    ]  # fmt: skip
    return JobRequest([options], f"#!/bin/bash\n{job_command(stamp, seconds)}\n", "/tmp")


def replay(
    client: SlurmClient,
    jobs: list[TraceJob],
    *,
    compression: float,
    gpus_per_node: int,
    stamps: Path,
    t0: float,
    log: Callable[[str], None],
) -> list[Submitted]:
    """Submit every job at its arrival (t0 + submitted / compression), then wait until
    Slurm has none left."""
    submitted: list[Submitted] = []
    for job in jobs:
        delay = t0 + job.submitted / compression - time.time()
        if delay > 0:
            time.sleep(delay)
        stamp = stamps / f"{job.name}.txt"
        at = time.time()
        job_id = client.submit(
            request(job, job.duration / compression, stamp, gpus_per_node), hold=False
        )
        submitted.append(Submitted(job, at, stamp, job_id))
    log(f"slurm alone: {len(submitted)} jobs submitted in {time.time() - t0:.0f} s")
    wanted = {item.job_id for item in submitted}
    while True:
        left = [j for j in client.jobs() if j.root_id in wanted and not j.ended]
        if not left:
            return submitted
        time.sleep(1.0)
