"""Side 2: Fairway deciding, Slurm executing. A pool with backend `slurm` on the same
partition (made by the pool service: a new pool's settings, the lab profile), one
department deserving every GPU and one project per team deserving its quota; each job
submitted through `workload_submit` at its arrival, with the same command as on Slurm
alone. This process plays the worker and the beat, on a database of its own (SQLite under
the benchmark's directory) without a broker: every change asks for a cycle, which Celery
runs at once in this process (as the worker would), and every LOOP_SECONDS a runtime tick
(the Slurm executor's observe: nodes, jobs, releases, logs) and a safety-net cycle, as the
beat sends them. `scontrol release` is timed here to print how long a released job takes
to start its process, and where that time goes (benchmarks.slurm_vs_fairway.latency)."""

from __future__ import annotations

import argparse
import contextlib
import resource
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from benchmarks.slurm_vs_fairway.cluster import PARTITION, BenchSlurm, account
from benchmarks.slurm_vs_fairway.latency import (
    allocations,
    first_after,
    p50_p95,
    release_split,
    starts,
)
from benchmarks.slurm_vs_fairway.stamps import Submitted, job_command, tally
from scheduler_core.choices import TERMINAL_STATES, Backend
from scheduler_core.loop.triggers import send_cycle_task
from scheduler_core.models import PodRun, Workload
from scheduler_core.runtime.executors.slurm.client import SlurmClient
from scheduler_core.runtime.tick import tick
from scheduler_core.services.cluster import pool_create
from scheduler_core.services.org import department_create, project_create
from scheduler_core.services.quotas import queue_owner_set_quota
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from scheduler_core.whatif.run_figures import RunFigures
from scheduler_core.whatif.traces import TraceCluster, TraceJob, pod_shape

LOOP_SECONDS = 0.25


def _cluster_in_fairway(cluster: TraceCluster, output: Path) -> dict[str, Any]:
    """The pool, department, projects and quotas; the projects by team."""
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_superuser(username="bench", password="x", email="")
    pool = pool_create(
        user=user, name="slurm", backend=Backend.SLURM, grace_period=5,
        backend_settings={
            "partition": PARTITION, "output_dir": str(output), "account": account("fairway"),
        },
    )  # fmt: skip
    department = department_create(user=user, name="teams")
    queue_owner_set_quota(user=user, owner=department, pool=pool, gpus=float(cluster.gpus))
    projects: dict[str, Any] = {"user": user, "pool": pool}
    for team, gpus in sorted(cluster.quotas.items()):
        project = project_create(user=user, department=department, name=f"t-{team}")
        queue_owner_set_quota(user=user, owner=project, pool=pool, gpus=float(gpus))
        projects[team] = project
    return projects


def _submit(
    job: TraceJob, seconds: float, stamp: Path, context: dict[str, Any], gpus_per_node: int
) -> None:
    pods, per_pod = pod_shape(job.gpus, gpus_per_node)
    request = WorkloadRequest(
        project=context[job.team], name=job.name, pods=pods, gpus=float(per_pod),
        pools=[context["pool"]], spec={"command": job_command(stamp, seconds)},
    )  # fmt: skip
    workload_submit(user=context["user"], request=request)


def _done() -> bool:
    return not Workload.objects.exclude(status__in=TERMINAL_STATES).exists()


def _step() -> None:
    tick()
    send_cycle_task()


def run(
    jobs: list[TraceJob],
    cluster: TraceCluster,
    args: argparse.Namespace,
    bench: BenchSlurm,
    log: Callable[[str], None],
) -> tuple[RunFigures, str]:
    """Replay `jobs` through Fairway on the benchmark's Slurm; figures and CPU times."""
    bench.add_accounts(bench.start(), {"fairway": 1.0})  # sbatch needs an account there
    settings.SLURM_CONF = bench.conf
    settings.SCHEDULER_AUTORUN = True  # cycles run in this process (eager Celery)
    stamps = args.slurm_dir / "stamps-fairway"
    stamps.mkdir(parents=True, exist_ok=True)
    for old in stamps.glob("*.txt"):
        old.unlink()
    context = _cluster_in_fairway(cluster, args.slurm_dir / "output")
    tick()  # discover the partition's nodes
    ctld = bench.controller_cpu_seconds()
    cpu = time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time() + 2.0
    submitted: list[Submitted] = []
    pending = list(jobs)
    with releases_recorded() as released:
        _drive(pending, submitted, stamps, context, t0, args.compression)
    log(f"fairway on slurm: {len(submitted)} jobs done")
    used = time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    commands = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    spent_ctld = bench.controller_cpu_seconds() - ctld
    firsts = {item.job.name: starts(item.stamp) for item in submitted}
    allocated = allocations(bench.directory / "log" / "slurmctld.log", t0 - 2.0)
    text = (
        f"fairway {used:.1f} s (+ its Slurm commands {commands:.1f} s), slurmctld "
        f"{spent_ctld:.1f} s; placement to process start p50 {_placement_latency(firsts)}; "
        + release_split(released, allocated, _by_job(firsts))
    )
    return tally(submitted, cluster, t0, args.compression), text


def _drive(
    pending: list[TraceJob], submitted: list[Submitted], stamps: Path,
    context: dict[str, Any], t0: float, compression: float,
) -> None:  # fmt: skip
    """Submit each job at its arrival and step the scheduler until every one has ended."""
    while pending or not _done():
        now = time.time()
        while pending and t0 + pending[0].submitted / compression <= now:
            job = pending.pop(0)
            stamp = stamps / f"{job.name}.txt"
            _submit(job, job.duration / compression, stamp, context, 8)
            submitted.append(Submitted(job, time.time(), stamp))
        began = time.monotonic()
        _step()
        time.sleep(max(0.0, LOOP_SECONDS - (time.monotonic() - began)))


@contextlib.contextmanager
def releases_recorded() -> Iterator[list[tuple[int, float]]]:
    """(Slurm job id, epoch seconds) of every `scontrol release` the executor runs."""
    released: list[tuple[int, float]] = []
    original = SlurmClient.release

    def release(self: SlurmClient, job_ids: Iterable[int]) -> None:
        ids = list(job_ids)
        original(self, ids)
        released.extend((job_id, time.time()) for job_id in ids)

    SlurmClient.release = release  # type: ignore[method-assign]
    try:
        yield released
    finally:
        SlurmClient.release = original  # type: ignore[method-assign]


def _placement_latency(firsts: dict[str, list[float]]) -> str:
    """From a run's creation (Fairway placed the pod) to its process's first line: the
    wait for the GPUs to be given up by the runs it replaces included."""
    gaps = []
    for name, created in PodRun.objects.filter(group="main", pod_index=0).values_list(
        "workload__name", "created_at"
    ):
        gap = first_after(firsts.get(name, []), created.timestamp())
        if gap is not None:
            gaps.append(gap)
    return p50_p95(gaps)


def _by_job(firsts: dict[str, list[float]]) -> dict[int, list[float]]:
    """The process start times of each Slurm job (its pod group's first pod's)."""
    names = dict(
        PodRun.objects.filter(group="main", pod_index=0).exclude(external_id="")
        .values_list("external_id", "workload__name")
    )  # fmt: skip
    return {int(job_id): firsts.get(name, []) for job_id, name in names.items()}
