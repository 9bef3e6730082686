"""The live load test behind `manage.py loadtest`: Kueue's published baseline load
replayed on the live scheduler.

5 departments x 6 projects (quota 20 GPUs each, limit 120), 75 nodes x 8 GPUs. Per
project: 350 one-GPU jobs of 0.2 s every 0.1 s (priority 50), 100 five-GPU jobs of 0.5 s
every 0.5 s (priority 100), 50 twenty-GPU jobs of 1 s every 1.2 s (priority 200): 15,000
workloads arriving over 60 s. Everything runs for real, in wall-clock time: submissions
through the services, cycles in a Celery worker (whose scheduling loop also completes
simulated runs as they end), PostgreSQL. It prints the wall time to drain, GPU usage per
project and time to admission per class, next to Kueue's figures.

The load's objects are named `lt-...` in a pool `loadtest`; a run first deletes those of
the previous run. Use a database of its own (it adds 15,000 workloads and their events).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Avg, Count, Max, Min, Sum
from django.utils import timezone

from benchmarks.engine_bench import KUEUE_CLASSES, kueue_baseline_workloads
from scheduler_core.choices import TERMINAL_STATES, EventType, WorkloadStatus
from scheduler_core.loop import triggers
from scheduler_core.models import (
    Allocation,
    CycleRecord,
    Department,
    Node,
    NodePool,
    Project,
    QueueState,
    Quota,
    SchedulingEvent,
    UsageSample,
    Workload,
)
from scheduler_core.services.workloads import WorkloadRequest, workload_submit_bulk

POOL = "loadtest"
PREFIX = "lt-"
KUEUE = {"drain": 351.0, "usage": 58.7, "small": 6.7, "medium": 76.8, "large": 215.0}
ROOT = Path(__file__).resolve().parents[1]


class LoadTestError(Exception):
    """The load test cannot run or did not finish (the message says why)."""


Arrival = tuple[float, str, str, int, float, int]  # at, project, name, gpus, seconds, priority


class LoadTest:
    """One run of the load; `write` prints a line of the report, `warn` a warning."""

    def __init__(self, *, write: Callable[[str], Any], warn: Callable[[str], Any]) -> None:
        self.write = write
        self.warn = warn

    # --- setup --------------------------------------------------------------------------

    def _clean(self) -> None:
        projects = Project.objects.filter(name__startswith=PREFIX)
        Allocation.objects.filter(workload__project__in=projects).delete()
        SchedulingEvent.objects.filter(project__in=projects).delete()
        Workload.objects.filter(project__in=projects).delete()
        UsageSample.objects.filter(pool__name=POOL).delete()
        QueueState.objects.filter(pool__name=POOL).delete()
        Quota.objects.filter(pool__name=POOL).delete()
        projects.delete()
        Department.objects.filter(name__startswith=PREFIX).delete()
        Node.objects.filter(pool__name=POOL).delete()
        NodePool.objects.filter(name=POOL).delete()

    def _build(self) -> tuple[NodePool, dict[str, Project]]:
        pool = NodePool.objects.create(name=POOL, description="manage.py loadtest")
        Node.objects.bulk_create(
            Node(pool=pool, name=f"{PREFIX}node-{i}", gpu_count=8, last_heartbeat=timezone.now())
            for i in range(75)
        )
        projects = {}
        for d in range(5):
            dept = Department.objects.create(name=f"{PREFIX}dept-{d}")
            Quota.objects.create(department=dept, pool=pool, gpus=120)
            for p in range(6):
                project = Project.objects.create(department=dept, name=f"{PREFIX}proj-{d}-{p}")
                Quota.objects.create(project=project, pool=pool, gpus=20, limit_gpus=120)
                projects[f"proj-{d}-{p}"] = project
        return pool, projects

    def _start_worker(self, queue: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "SCHEDULER_CYCLE_QUEUE": queue}
        log = open(settings.VAR_DIR / "loadtest-worker.log", "w")  # noqa: SIM115
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-Q", queue,
             "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        time.sleep(4)
        if worker.poll() is not None:
            raise LoadTestError(f"the worker did not start; see {log.name}")
        return worker

    # --- the run --------------------------------------------------------------------------

    def run(
        self, *, scale: float, tick: float, start_worker: bool, timeout: float, keep: bool
    ) -> None:
        """Build the cluster, submit the load on time, wait until it drains, report."""
        if not settings.REDIS_URL or settings.CELERY_TASK_ALWAYS_EAGER:
            raise LoadTestError("loadtest needs Redis and a Celery worker: set REDIS_URL")
        if connection.vendor != "postgresql":
            self.warn("warning: not PostgreSQL; figures will not be representative")
        if not 0 < scale <= 1:
            raise LoadTestError("--scale must be in (0, 1]")
        self._clean()
        pool, projects = self._build()
        user, _ = get_user_model().objects.get_or_create(
            username=f"{PREFIX}runner", defaults={"is_superuser": True, "is_staff": True}
        )
        arrivals = self._arrivals(scale)
        work = sum(gpus * seconds for _, _, _, gpus, seconds, _ in arrivals)
        self.write(
            f"Kueue baseline x{scale:g}: {len(arrivals)} workloads over "
            f"{arrivals[-1][0]:.1f} s on 600 GPUs (ideal drain {work / 600:.1f} s)"
        )
        queue = f"fairway-loadtest-{uuid.uuid4().hex[:6]}"
        settings.SCHEDULER_CYCLE_QUEUE = queue
        settings.SCHEDULER_AUTORUN = True
        worker = self._start_worker(queue) if start_worker else None
        first_cycle = CycleRecord.objects.aggregate(m=Max("pk"))["m"] or 0
        stop = threading.Event()
        ticker = threading.Thread(target=self._tick_loop, args=(stop, tick), daemon=True)
        try:
            start = time.monotonic()
            started_at = timezone.now()
            ticker.start()
            lag, slowest = self._submit(arrivals, projects, pool, user, start)
            self.write(
                f"  all submitted after {time.monotonic() - start:.1f} s "
                f"(the load's arrivals span {arrivals[-1][0]:.1f} s); submissions were at most "
                f"{lag:.2f} s late, the slowest took {slowest:.2f} s"
            )
            drained = self._wait_drained(projects, start, timeout)
            stop.set()
            ticker.join()
            self._report(
                started_at=started_at, drained=drained, projects=projects,
                work=work, first_cycle=first_cycle, scale=scale,
            )  # fmt: skip
        finally:
            stop.set()
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=30)
            if not keep:
                self._clean()

    def _arrivals(self, scale: float) -> list[Arrival]:
        """(at, project, name, gpus, seconds, priority) for the scaled load."""
        keep = {c.name: max(1, round(c.count * scale)) for c in KUEUE_CLASSES}
        projects = [f"proj-{d}-{p}" for d in range(5) for p in range(6)]
        out = []
        for at, spec, seconds, klass in kueue_baseline_workloads(projects):
            if int(spec.id.rsplit("-", 1)[1]) < keep[klass]:
                gpus = int(spec.groups[0].request.gpus)
                out.append((at, spec.project, f"{klass}-{spec.id}", gpus, seconds, spec.priority))
        return out

    def _submit(
        self,
        arrivals: list[Arrival],
        projects: dict[str, Project],
        pool: NodePool,
        user: AbstractBaseUser,
        start: float,
    ) -> tuple[float, float]:
        """Submit each instant's arrivals in one bulk call, on time; returns how late the
        latest one was and how long the slowest call took (seconds)."""
        i = 0
        lag = slowest = 0.0
        while i < len(arrivals):
            at = arrivals[i][0]
            delay = start + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            lag = max(lag, -delay)
            batch = []
            while i < len(arrivals) and arrivals[i][0] <= at + 1e-9:
                _, project, name, gpus, seconds, priority = arrivals[i]
                # A node has 8 GPUs: a 20-GPU job is a gang of 5 pods x 4 GPUs.
                pods, per_pod = (1, gpus) if gpus <= 8 else (gpus // 4, 4)
                batch.append(
                    WorkloadRequest(
                        project=projects[project], name=name, gpus=per_pod, pods=pods,
                        priority=priority,
                        preemptible=True, pools=[pool], spec={"duration": seconds},
                    )
                )  # fmt: skip
                i += 1
            began = time.monotonic()
            workload_submit_bulk(user=user, requests=batch)
            slowest = max(slowest, time.monotonic() - began)
        return lag, slowest

    def _tick_loop(self, stop: threading.Event, tick: float) -> None:
        """The beat's safety net: ask for a cycle every `tick` seconds. (The worker's
        scheduling loop completes simulated runs when they end.)"""
        while not stop.wait(tick):
            triggers.enqueue_cycle()

    def _wait_drained(self, projects: dict[str, Project], start: float, timeout: float) -> float:
        ids = [p.pk for p in projects.values()]
        active = Workload.objects.filter(project_id__in=ids).exclude(status__in=TERMINAL_STATES)
        last_report = 0.0
        while True:
            left = active.count()
            elapsed = time.monotonic() - start
            if left == 0:
                return elapsed
            if elapsed > timeout:
                raise LoadTestError(f"{left} workloads still active after {timeout:g} s")
            if elapsed - last_report >= 10:
                self.write(f"  t={elapsed:5.1f} s: {left} workloads not finished")
                last_report = elapsed
            time.sleep(0.2)

    # --- the figures ----------------------------------------------------------------------

    def _report(
        self,
        *,
        started_at: datetime,
        drained: float,
        projects: dict[str, Project],
        work: float,
        first_cycle: int,
        scale: float,
    ) -> None:
        ids = [p.pk for p in projects.values()]
        workloads = Workload.objects.filter(project_id__in=ids)
        last_finish = workloads.aggregate(m=Max("finished_at"))["m"]
        makespan = (last_finish - started_at).total_seconds() if last_finish else drained
        admitted = dict(
            SchedulingEvent.objects.filter(project_id__in=ids, type=EventType.ALLOCATED)
            .values_list("workload_id")
            .annotate(first=Min("created_at"))
            .order_by()
        )
        waits: dict[str, list[float]] = defaultdict(list)
        for pk, name, submitted in workloads.values_list("pk", "name", "submitted_at"):
            if pk in admitted:
                waits[name.split("-", 1)[0]].append((admitted[pk] - submitted).total_seconds())
        status = dict(workloads.values_list("status").annotate(n=Count("pk")).order_by())
        # GPU-seconds each project's completed runs held (pods x GPUs x run time), over
        # its quota (20 GPUs) for the whole drain: Kueue's "usage per ClusterQueue".
        held: dict[int, float] = defaultdict(float)
        for project_id, pods, gpus, started, finished in workloads.filter(
            status=WorkloadStatus.COMPLETED
        ).values_list("project_id", "pods", "gpus", "started_at", "finished_at"):
            if started is not None and finished is not None:  # (a completed run has both)
                held[project_id] += pods * gpus * (finished - started).total_seconds()
        per_project = [held[pk] / (20 * makespan) * 100 for pk in ids]
        cycles = CycleRecord.objects.filter(pk__gt=first_cycle)
        c = cycles.aggregate(
            n=Count("pk"), mean=Avg("duration_seconds"), mx=Max("duration_seconds"),
            decisions=Sum("decisions"), dropped=Sum("dropped_decisions"),
        )  # fmt: skip
        preempted = SchedulingEvent.objects.filter(
            project_id__in=ids, type=EventType.PREEMPTED
        ).count()
        out = self.write
        out("")
        out(f"Results (scale {scale:g}; Kueue's figures are for the full load)")
        out(f"  wall time to drain:        {makespan:7.1f} s   (Kueue 351 s, ideal "
            f"{work / 600:.1f} s)")  # fmt: skip
        out(f"  GPU usage per project:     {statistics.mean(per_project):7.1f} %   (Kueue 58.7 %;"
            f" min {min(per_project):.1f}, max {max(per_project):.1f})")  # fmt: skip
        out(f"  busy GPU time / capacity:  {work / (600 * makespan) * 100:7.1f} %")
        for klass in ("small", "medium", "large"):
            values = waits.get(klass, [])
            mean = statistics.mean(values) if values else float("nan")
            out(f"  time to admission {klass:6s}:  {mean:7.2f} s   (Kueue {KUEUE[klass]} s)")
        out(f"  statuses: {status}; preemptions: {preempted}")
        out(f"  cycles: {c['n']}, mean {1000 * (c['mean'] or 0):.0f} ms, max "
            f"{1000 * (c['mx'] or 0):.0f} ms, decisions {c['decisions']}, "
            f"dropped {c['dropped']}")  # fmt: skip
