"""The live load test behind `manage.py loadtest`: Kueue's published loads replayed on
the live scheduler (PROFILES; Kueue's cohorts are departments, its cluster queues
projects with quota 20 GPUs and limit 120, i.e. borrowing limit 100).

- baseline (the default): 5 departments x 6 projects, 75 nodes x 8 GPUs. Per project:
  350 one-GPU jobs of 0.2 s every 0.1 s (priority 50), 100 five-GPU jobs of 0.5 s every
  0.5 s (priority 100), 50 twenty-GPU jobs of 1 s every 1.2 s (priority 200): 15,000
  workloads arriving over 60 s.
- large-scale: 10 departments x 100 projects, 2,500 nodes x 8 GPUs. Per project: 35
  one-GPU jobs of 0.15 s every 60 ms, 11 five-GPU jobs of 0.35 s every 0.3 s, 4
  twenty-GPU jobs of 0.7 s every 0.7 s: 50,000 workloads arriving over 3 s.

Everything runs for real, in wall-clock time: submissions through the services, cycles
in a Celery worker (whose scheduling loop also completes simulated runs as they end),
PostgreSQL. It prints the wall time to drain, GPU usage per project, time to admission
per class, admissions per second, the slowest cycle and how late the submitter was
(a run whose submissions were more than LATE_LIMIT late is marked invalid), next to
Kueue's figures and the profile's targets.

The load's objects are named `lt-...` in a pool `loadtest`; a run first deletes those of
the previous run. Use a database of its own (it adds 15,000 workloads and their events).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, connections
from django.db.models import Avg, Count, Max, Min, QuerySet, Sum
from django.utils import timezone

from benchmarks.engine_bench import (
    KUEUE_CLASSES,
    KUEUE_LARGE_SCALE_CLASSES,
    JobClass,
    kueue_baseline_workloads,
)
from scheduler_core.choices import TERMINAL_STATES, EventType, WorkloadStatus
from scheduler_core.engine.profiles import PROFILE_KAI, profile_settings
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
ROOT = Path(__file__).resolve().parents[1]
LATE_LIMIT = 1.0
"""Seconds a submission may be late before the run's figures stop meaning anything."""
SUBMITTERS = 2
"""Client processes submitting at once (each instant's arrivals in one call, the
instants in turn)."""


@dataclass(frozen=True, slots=True)
class LoadProfile:
    """A load to replay: the cluster (departments x projects of `quota` GPUs, limit
    `limit`; nodes of 8 GPUs), the job classes per project, Kueue's published figures
    (`kueue`: drain s, usage %, mean time to admission s per class) and the targets
    (`targets`: drain s, usage %, slowest cycle s; those that apply)."""

    name: str
    departments: int
    projects: int
    nodes: int
    classes: tuple[JobClass, ...]
    kueue: dict[str, float]
    targets: dict[str, float]
    quota: int = 20
    limit: int = 120
    gpus_per_node: int = 8
    worker_nice: int = 0
    """The worker's niceness: the submitting clients stand in for a lab's own machines,
    so where they need most of a core (large-scale: 50,000 workloads in 3 s) the worker
    yields to them and gets what is left (its cycles run slower while they submit)."""

    @property
    def gpus(self) -> int:
        """GPUs of the cluster."""
        return self.nodes * self.gpus_per_node

    def project_names(self) -> list[str]:
        """The projects' names (without PREFIX), department by department."""
        return [f"proj-{d}-{p}" for d in range(self.departments) for p in range(self.projects)]


PROFILES: dict[str, LoadProfile] = {
    "baseline": LoadProfile(
        "baseline", 5, 6, 75, KUEUE_CLASSES,
        kueue={"drain": 351.0, "usage": 58.7, "small": 6.7, "medium": 76.8, "large": 215.0},
        targets={"drain": 72.0, "usage": 90.0},
    ),
    "large-scale": LoadProfile(
        "large-scale", 10, 100, 2500, KUEUE_LARGE_SCALE_CLASSES,
        kueue={"drain": 1179.4, "usage": 38.6, "small": 700.4, "medium": 256.4, "large": 105.6},
        targets={"drain": 120.0, "slowest_cycle": 2.0}, worker_nice=10,
    ),
}  # fmt: skip
"""Kueue's figures: configs/<name>/rangespec.yaml in kubernetes-sigs/kueue (means of
its calibration runs; the baseline's usage and admission times without equivalence
hashing)."""


class LoadTestError(Exception):
    """The load test cannot run or did not finish (the message says why)."""


Arrival = tuple[float, str, str, int, float, int]  # at, project, name, gpus, seconds, priority


class LoadTest:
    """One run of the load; `write` prints a line of the report, `warn` a warning."""

    def __init__(
        self,
        *,
        write: Callable[[str], Any],
        warn: Callable[[str], Any],
        profile: LoadProfile = PROFILES["baseline"],
        pool_profile: str = PROFILE_KAI,
    ) -> None:
        self.write = write
        self.warn = warn
        self.profile = profile
        self.pool_profile = pool_profile

    # --- setup --------------------------------------------------------------------------

    def clean(self) -> None:
        """Delete the load's objects (those of an earlier run too); nothing when pods of
        other workloads run on the load's nodes (LoadTestError says which)."""
        projects = Project.objects.filter(name__startswith=PREFIX)
        strangers = (
            Allocation.objects.filter(node__pool__name=POOL)
            .exclude(workload__project__in=projects)
            .values_list("workload__project__name", "workload__name")
            .distinct()
        )
        if found := [f"{project}/{name}" for project, name in strangers[:3]]:
            raise LoadTestError(
                f"pods of workloads outside the load test run on its pool {POOL!r} (for "
                f"example {', '.join(found)}): cancel them, or run the load test on a "
                "database of its own (DATABASE_URL)"
            )
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

    def build(self) -> tuple[NodePool, dict[str, Project]]:
        """The profile's pool, nodes, departments and projects with their quotas."""
        profile = self.profile
        pool = NodePool.objects.create(
            name=POOL,
            description="manage.py loadtest",
            **profile_settings(self.pool_profile),
        )
        now = timezone.now()
        Node.objects.bulk_create(
            Node(
                pool=pool,
                name=f"{PREFIX}node-{i}",
                gpu_count=profile.gpus_per_node,
                last_heartbeat=now,
            )
            for i in range(profile.nodes)
        )
        projects = {}
        for d in range(profile.departments):
            dept = Department.objects.create(name=f"{PREFIX}dept-{d}")
            Quota.objects.create(department=dept, pool=pool, gpus=profile.quota * profile.projects)
            for p in range(profile.projects):
                project = Project.objects.create(department=dept, name=f"{PREFIX}proj-{d}-{p}")
                Quota.objects.create(
                    project=project, pool=pool, gpus=profile.quota, limit_gpus=profile.limit
                )
                projects[f"proj-{d}-{p}"] = project
        return pool, projects

    def _start_worker(self, queue: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ, "SCHEDULER_CYCLE_QUEUE": queue,
            "SCHEDULER_KEY_PREFIX": settings.SCHEDULER_KEY_PREFIX,
            "DB_CONN_MAX_AGE": str(settings.WORKER_DB_CONN_MAX_AGE),  # as `manage.py run`
        }  # fmt: skip
        log = open(settings.VAR_DIR / "loadtest-worker.log", "w")  # noqa: SIM115
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-Q", queue,
             "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.nice(self.profile.worker_nice)),
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
        self.clean()
        pool, projects = self.build()
        user, _ = get_user_model().objects.get_or_create(
            username=f"{PREFIX}runner", defaults={"is_superuser": True, "is_staff": True}
        )
        arrivals = self.arrivals(scale)
        work = sum(gpus * seconds for _, _, _, gpus, seconds, _ in arrivals)
        gpus = self.profile.gpus
        self.write(
            f"Kueue {self.profile.name} x{scale:g}: {len(arrivals)} workloads over "
            f"{arrivals[-1][0]:.1f} s on {gpus:,} GPUs (ideal drain {work / gpus:.1f} s); "
            f"the pool's policy profile: {self.pool_profile}"
        )
        queue = f"fairway-loadtest-{uuid.uuid4().hex[:6]}"
        settings.SCHEDULER_CYCLE_QUEUE = queue
        settings.SCHEDULER_AUTORUN = True
        if start_worker:
            # Trigger keys of its own, as its queue: the run before left its "task queued"
            # mark (a task its stopped worker never took, on that run's queue), and for
            # the mark's 30 s no request enqueued a task for this run's worker.
            settings.SCHEDULER_KEY_PREFIX = queue
        worker = self._start_worker(queue) if start_worker else None
        first_cycle = CycleRecord.objects.aggregate(m=Max("pk"))["m"] or 0
        stop = threading.Event()
        ticker = threading.Thread(target=self._tick_loop, args=(stop, tick), daemon=True)
        try:
            start = time.monotonic()
            started_at = timezone.now()
            # the ticker starts once the clients are forked (no lock of its held in them)
            lag, slowest = self._submit(arrivals, projects, pool, user, start, ticker.start)
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
                work=work, first_cycle=first_cycle, scale=scale, lag=lag,
            )  # fmt: skip
        finally:
            stop.set()
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=30)
            if not keep:
                self.clean()
            self._drop_queue(queue)  # last: cleaning up asks for a cycle too

    def _drop_queue(self, queue: str) -> None:
        """Delete the run's queue in the broker (the tasks its stopped worker left; the
        run's trigger keys expire by themselves); a failure here only warns (the run's own
        error comes first)."""
        try:
            with current_app.connection_for_write() as conn:
                # Celery's own declaration of the queue, declared on this channel so that
                # it knows the binding the broker's delete goes by
                bound = current_app.amqp.queues[queue](conn.default_channel)
                bound.declare()
                bound.delete()
        except Exception as error:  # cleanup after the run, whatever failed
            self.warn(f"warning: could not delete the run's queue {queue}: {error}")

    def arrivals(self, scale: float) -> list[Arrival]:
        """(at, project, name, gpus, seconds, priority) for the scaled load."""
        classes = self.profile.classes
        keep = {c.name: max(1, round(c.count * scale)) for c in classes}
        projects = self.profile.project_names()
        out = []
        for at, spec, seconds, klass in kueue_baseline_workloads(projects, classes):
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
        forked: Callable[[], None],
    ) -> tuple[float, float]:
        """Submit each instant's arrivals in one bulk call, on time, from SUBMITTERS
        clients (processes, each with its own connection, taking the instants in turn:
        clients of a lab run on their own machines, and one process could not send the
        large-scale load in time); returns how late the latest call was (until it
        returned: a cycle cannot see it before) and how long the slowest took (seconds).
        `forked()` is called once the clients run."""
        instants = _instants(arrivals, projects, pool)
        connections.close_all()  # each client opens its own
        fork = multiprocessing.get_context("fork")
        clients = []
        for k in range(SUBMITTERS):
            receive, send = fork.Pipe(duplex=False)
            process = fork.Process(
                target=_client, args=(instants[k::SUBMITTERS], user, start, send), daemon=True
            )
            process.start()
            send.close()
            clients.append((process, receive))
        forked()
        results = []
        for process, receive in clients:
            try:
                results.append(receive.recv())
            except EOFError:
                raise LoadTestError("a submitter died (its error is above)") from None
            process.join()
        failed = [r for r in results if isinstance(r, str)]
        if failed:
            raise LoadTestError(f"a submitter failed: {failed[0]}")
        return max(lag for lag, _ in results), max(slowest for _, slowest in results)

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
        lag: float,
    ) -> None:
        profile = self.profile
        ids = [p.pk for p in projects.values()]
        workloads = Workload.objects.filter(project_id__in=ids)
        last_finish = workloads.aggregate(m=Max("finished_at"))["m"]
        makespan = (last_finish - started_at).total_seconds() if last_finish else drained
        waits = _admission_waits(workloads, ids)
        status = dict(workloads.values_list("status").annotate(n=Count("pk")).order_by())
        per_project = self._usage_per_project(workloads, ids, makespan)
        cycles = CycleRecord.objects.filter(pk__gt=first_cycle)
        c = _cycle_totals(cycles)
        preempted = SchedulingEvent.objects.filter(
            project_id__in=ids, type=EventType.PREEMPTED
        ).count()
        kueue = profile.kueue
        gpus = profile.gpus
        usage = statistics.mean(per_project)
        lost = sum(status.values()) - status.get(WorkloadStatus.COMPLETED, 0)
        out = self.write
        out("")
        out(f"Results ({profile.name}, scale {scale:g}; Kueue's figures are for the full load)")
        out(f"  wall time to drain:        {makespan:7.1f} s   (Kueue {kueue['drain']:g} s, ideal "
            f"{work / gpus:.1f} s)")  # fmt: skip
        out(f"  GPU usage per project:     {usage:7.1f} %   (Kueue {kueue['usage']} %;"
            f" min {min(per_project):.1f}, max {max(per_project):.1f})")  # fmt: skip
        out(f"  busy GPU time / capacity:  {work / (gpus * makespan) * 100:7.1f} %")
        for klass in ("small", "medium", "large"):
            values = waits.get(klass, [])
            mean = statistics.mean(values) if values else float("nan")
            out(f"  time to admission {klass:6s}:  {mean:7.2f} s   (Kueue {kueue[klass]:g} s)")
        out(f"  statuses: {status}; lost: {lost}; preemptions: {preempted}")
        self._admission_rate(ids, started_at, makespan)
        out(f"  cycles: {c['n']}, mean {1000 * (c['mean'] or 0):.0f} ms, max "
            f"{1000 * (c['mx'] or 0):.0f} ms, decisions {c['decisions']}, "
            f"dropped {c['dropped']}")  # fmt: skip
        self._slowest_cycle(cycles)
        verdict = "valid run" if lag <= LATE_LIMIT else f"INVALID run (over {LATE_LIMIT:g} s)"
        clients = f"{SUBMITTERS} client processes" + (
            f", the worker at nice {self.profile.worker_nice}" if self.profile.worker_nice else ""
        )
        out(f"  submitter ({clients}): at most {lag:.2f} s late: {verdict}")
        self._verdicts(
            makespan=makespan, usage=usage, lost=lost, slowest=c["mx"] or 0.0, scale=scale
        )

    def _usage_per_project(self, workloads: Any, ids: list[int], makespan: float) -> list[float]:
        """GPU-seconds each project's completed runs held (pods x GPUs x run time), over
        its quota for the whole drain: Kueue's "usage per ClusterQueue" (percent)."""
        held: dict[int, float] = defaultdict(float)
        for project_id, pods, gpus, started, finished in workloads.filter(
            status=WorkloadStatus.COMPLETED
        ).values_list("project_id", "pods", "gpus", "started_at", "finished_at"):
            if started is not None and finished is not None:  # (a completed run has both)
                held[project_id] += pods * gpus * (finished - started).total_seconds()
        return [held[pk] / (self.profile.quota * makespan) * 100 for pk in ids]

    def _admission_rate(self, ids: list[int], started_at: datetime, makespan: float) -> None:
        """Admissions (allocations, re-admissions after a preemption included) per second
        over the run, and the busiest second."""
        stamps = SchedulingEvent.objects.filter(
            project_id__in=ids, type=EventType.ALLOCATED
        ).values_list("created_at", flat=True)
        per_second = Counter(int((at - started_at).total_seconds()) for at in stamps)
        total = sum(per_second.values())
        busiest = max(per_second.values(), default=0)
        self.write(
            f"  admissions: {total} in {makespan:.1f} s, {total / max(makespan, 1e-9):.0f} per "
            f"second over the run, {busiest} in the busiest second"
        )

    def _slowest_cycle(self, cycles: Any) -> None:
        """The slowest cycle: how long, how much it decided and where its time went."""
        slowest = cycles.order_by("-duration_seconds").first()
        if slowest is None:
            return
        seconds = slowest.details.get("seconds", {})
        parts = ", ".join(
            f"{k} {1000 * seconds[k]:.0f}" for k in ("load", "engine", "apply") if k in seconds
        )
        self.write(
            f"  slowest cycle: {1000 * slowest.duration_seconds:.0f} ms ({parts} ms), "
            f"{slowest.decisions} decisions, {slowest.pending} pending, {slowest.running} running"
        )

    def _verdicts(
        self, *, makespan: float, usage: float, lost: int, slowest: float, scale: float
    ) -> None:
        """The profile's targets, met or not; a run of part of the load (`scale` under 1)
        is judged on losing nothing only (the other targets are the full load's)."""
        checks = [("nothing lost", lost == 0, f"{lost} lost")]
        self.write("Targets:")
        if scale < 1:
            self._write_checks(checks)
            self.write(f"  the others are the full load's: not judged at --scale {scale:g}")
            return
        targets = self.profile.targets
        if "drain" in targets:
            checks.append(
                (f"drain <= {targets['drain']:g} s", makespan <= targets["drain"],
                 f"{makespan:.1f} s")
            )  # fmt: skip
        if "usage" in targets:
            checks.append(
                (f"GPU usage >= {targets['usage']:g} %", usage >= targets["usage"],
                 f"{usage:.1f} %")
            )  # fmt: skip
        if "slowest_cycle" in targets:
            checks.append(
                (f"no cycle over {targets['slowest_cycle']:g} s",
                 slowest <= targets["slowest_cycle"], f"slowest {slowest:.2f} s")
            )  # fmt: skip
        self._write_checks(checks)

    def _write_checks(self, checks: list[tuple[str, bool, str]]) -> None:
        for name, ok, figure in checks:
            self.write(f"  {name}: {'MET' if ok else 'NOT MET'} ({figure})")


def _instants(
    arrivals: list[Arrival], projects: dict[str, Project], pool: NodePool
) -> list[tuple[float, list[WorkloadRequest]]]:
    """The arrivals as requests, grouped by instant (a client prepares its requests before
    it sends them)."""
    instants: list[tuple[float, list[WorkloadRequest]]] = []
    for at, project, name, gpus, seconds, priority in arrivals:
        if not instants or at > instants[-1][0] + 1e-9:
            instants.append((at, []))
        # A node has 8 GPUs: a 20-GPU job is a gang of 5 pods x 4 GPUs.
        pods, per_pod = (1, gpus) if gpus <= 8 else (gpus // 4, 4)
        instants[-1][1].append(
            WorkloadRequest(
                project=projects[project], name=name, gpus=per_pod, pods=pods,
                priority=priority, preemptible=True, pools=[pool], spec={"duration": seconds},
            )
        )  # fmt: skip
    return instants


def _client(
    instants: list[tuple[float, list[WorkloadRequest]]],
    user: AbstractBaseUser,
    start: float,
    send: Connection,
) -> None:
    """One submitting client (a forked process): its (lag, slowest call), or its error."""
    try:
        send.send(_submit_on_time(instants, user, start))
    except Exception as exc:
        send.send(f"{type(exc).__name__}: {exc}")
    finally:
        connections.close_all()
        send.close()


def _submit_on_time(
    instants: list[tuple[float, list[WorkloadRequest]]], user: AbstractBaseUser, start: float
) -> tuple[float, float]:
    """Submit each instant's requests at its time; (how late the latest was until its
    call returned, how long the slowest call took), in seconds."""
    lag = slowest = 0.0
    for at, batch in instants:
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        began = time.monotonic()
        workload_submit_bulk(user=user, requests=batch)
        done = time.monotonic()
        slowest = max(slowest, done - began)
        lag = max(lag, done - (start + at))
    return lag, slowest


def _admission_waits(workloads: Any, ids: list[int]) -> dict[str, list[float]]:
    """Seconds from submission to the first allocation, per class (the name's prefix)."""
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
    return waits


def _cycle_totals(cycles: QuerySet[CycleRecord]) -> dict[str, Any]:
    """The run's cycles: how many, mean and longest duration, decisions made and dropped."""
    return cycles.aggregate(
        n=Count("pk"), mean=Avg("duration_seconds"), mx=Max("duration_seconds"),
        decisions=Sum("decisions"), dropped=Sum("dropped_decisions"),
    )  # fmt: skip
