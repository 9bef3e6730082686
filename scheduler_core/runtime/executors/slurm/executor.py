"""Slurm as an executor (docs/executors.md; README, "Slurm"): a pool with backend `slurm`
is a Slurm partition, and Fairway stays the only scheduler of it.

- start: one held job per workload, pinned to the nodes (and, where the GRES layout
  allows, the exact GPUs) Fairway chose, tagged with its runs; released once its GPUs
  are free (submit.py). A job Slurm refuses fails its runs with Slurm's message.
- stop: the pool's signal to every process of the job, then `scancel` after the pool's
  grace period (a timer here, and each observe as a safety net). Fairway has re-queued
  (preempt) or ended (cancel) the workload already; the job's end only ends the run.
- observe (each runtime tick): one `sinfo --json` and one `squeue --json` for every Slurm
  pool: the pools' nodes kept in step (nodes.py), held jobs released, each live run's
  state, exit code and devices reported (observe.py), its output shipped to the log store
  (logs.py). A controller that does not answer leaves every run as it is and marks the
  pools' nodes unreachable; starts it missed are submitted again once it answers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from scheduler_core.choices import Backend
from scheduler_core.models import Node, NodePool, PodRun
from scheduler_core.runtime.executor import (
    Capability,
    Launch,
    LiveRun,
    NodeSeen,
    Observation,
    RunPhase,
    RunReport,
    Stop,
    StopReason,
)
from scheduler_core.runtime.executors.slurm import logs, nodes
from scheduler_core.runtime.executors.slurm.client import SlurmClient
from scheduler_core.runtime.executors.slurm.errors import (
    SlurmError,
    SlurmRejected,
    SlurmUnavailable,
)
from scheduler_core.runtime.executors.slurm.observe import look
from scheduler_core.runtime.executors.slurm.records import SlurmJob, SlurmNode
from scheduler_core.runtime.executors.slurm.settings import job_prefix, pool_settings
from scheduler_core.runtime.executors.slurm.submit import (
    FreeGpus,
    PoolTarget,
    release_ready,
    run_launch,
    submit,
)
from scheduler_core.runtime.executors.slurm.tags import jobs_by_run, runs_of
from scheduler_core.runtime.launch import Launches
from scheduler_core.schemas.backends import SlurmPoolSettings

logger = logging.getLogger(__name__)


LATE_LOG_SECONDS = 30.0  # a run's output is still read this long after its end was seen


def submit_grace() -> float:
    """Seconds a starting run may go without a job before it is submitted again."""
    return float(getattr(settings, "SLURM_SUBMIT_GRACE", 30.0))


def client() -> SlurmClient:
    """A client of the installation's cluster (SLURM_CONF)."""
    return SlurmClient(
        conf=getattr(settings, "SLURM_CONF", "") or None,
        timeout=float(getattr(settings, "SLURM_COMMAND_TIMEOUT", 20.0)),
    )


def target(pool: NodePool) -> PoolTarget:
    values, partition, directory = pool_settings(pool.name, pool.backend_settings)
    return PoolTarget(partition, values.account, directory, values.preempt_signal)


def _pools_of_nodes(node_ids: Iterable[int]) -> dict[int, NodePool]:
    """Each node's pool, by node id."""
    return {
        node.pk: node.pool
        for node in Node.objects.filter(pk__in=set(node_ids)).select_related("pool")
    }


class SlurmExecutor:
    """Runs the pods of Slurm pools as Slurm batch jobs (see the module docstring)."""

    backend = Backend.SLURM
    capabilities = frozenset({Capability.ASSIGNS_DEVICES, Capability.KEEPS_LOGS})
    settings_model = SlurmPoolSettings

    def __init__(self) -> None:
        self._jobcomp: str | None = None

    # -- start --------------------------------------------------------------------------

    def start(self, launches: Sequence[Launch]) -> None:
        slurm = client()
        prefix = job_prefix()
        try:
            known = slurm.jobs()
            seen = {n.name: n for n in slurm.nodes()}
        except SlurmUnavailable as exc:
            logger.warning("Slurm does not answer; %d starts wait for it: %s", len(launches), exc)
            return  # observe submits them once Slurm answers (submit_grace)
        pools = _pools_of_nodes(p.node_id for launch in launches for p in launch.pods)
        refused: list[RunReport] = []
        free = FreeGpus(seen.values())  # released at once where their GPUs are free now
        ready: list[int] = []
        for launch in launches:
            pool = pools.get(launch.pods[0].node_id)
            if pool is None:
                continue
            if launch.image:
                refused += _refuse(launch, f"Slurm pools run commands on the nodes directly, "
                                   f"not in a container: this workload asks for the image "
                                   f"{launch.image!r}")  # fmt: skip
                continue
            if len(launch.pods) < launch.gang_size:
                whole = whole_gang(launch)
                if whole is None:
                    continue  # the others' runs are not recorded yet: their start comes
                launch = whole
            shaped = run_launch(launch, target(pool), seen, prefix)
            try:
                job_id = submit(slurm, shaped, known, prefix)
            except SlurmRejected as exc:
                refused += _refuse(launch, f"Slurm refused the job: {exc.message}")
                continue
            except SlurmUnavailable as exc:
                logger.warning("Slurm stopped answering during submissions: %s", exc)
                break
            if job_id is not None and free.claim_launch(shaped):
                ready.append(job_id)
        if refused:
            from scheduler_core.runtime.lifecycle import runs_observed

            runs_observed(refused)
        self._release(slurm, ready)

    def _release(self, slurm: SlurmClient, job_ids: list[int]) -> None:
        """Release jobs whose GPUs were free (the others wait for an observe)."""
        try:
            slurm.release(job_ids)
        except SlurmError as exc:
            logger.warning("could not release held Slurm jobs (next observe tries): %s", exc)

    # -- stop ---------------------------------------------------------------------------

    def stop(self, stops: Sequence[Stop]) -> None:
        slurm = client()
        prefix = job_prefix()
        try:
            by_run = jobs_by_run(slurm.jobs(), prefix)
        except SlurmUnavailable as exc:
            logger.warning("Slurm does not answer; %d stops wait for it: %s", len(stops), exc)
            return  # observe kills runs stopping past their grace period
        pools = _pools_of_nodes(s.node_id for s in stops)
        done: set[int] = set()
        for stop in stops:
            components = by_run.get(stop.run_id)
            if not components or components[0].root_id in done:
                continue
            job = components[0]
            done.add(job.root_id)
            pool = pools.get(stop.node_id)
            self._stop_job(slurm, job, stop, target(pool).signal if pool else "TERM")

    def _stop_job(self, slurm: SlurmClient, job: SlurmJob, stop: Stop, signal: str) -> None:
        try:
            if job.pending or stop.reason == StopReason.LOST or stop.grace_period <= 0:
                slurm.cancel([job.root_id])
                return
            # a gang's pods are an srun's tasks: they get it, the srun (batch shell) not
            slurm.signal(job.root_id, signal, batch=len(runs_of(job, job_prefix())) <= 1)
        except SlurmError as exc:
            logger.warning("could not stop Slurm job %s (observe retries): %s", job.root_id, exc)
            return
        timer = threading.Timer(stop.grace_period, _cancel_quietly, args=(job.root_id,))
        timer.daemon = True
        timer.start()

    # -- observe ------------------------------------------------------------------------

    def observe(self, runs: Sequence[LiveRun], now: datetime) -> Observation:
        pools = list(NodePool.objects.filter(backend=self.backend).order_by("pk"))
        if not pools and not runs:
            return Observation()
        slurm = client()
        prefix = job_prefix()
        try:
            jobs = slurm.jobs()
            seen_nodes = slurm.nodes()
        except SlurmUnavailable as exc:
            away = [name for pool in pools for name in nodes.mark_unreachable(pool, exc.message)]
            return Observation(nodes_unreachable=away)
        by_pool = self._nodes(pools, jobs, seen_nodes, prefix)
        release_ready(slurm, jobs, seen_nodes, prefix)
        by_run = jobs_by_run(jobs, prefix)
        records = self._records(slurm, runs, by_run)
        counts = dict(
            Node.objects.filter(pk__in={r.node_id for r in runs}).values_list("pk", "gpu_count")
        )
        seen = look(
            runs, by_run, records, overdue=_overdue(runs, by_run, now), now=now,
            gpu_counts=counts,
        )  # fmt: skip
        dirs = {p.pk: target(p).output_dir for p in pools}
        logs.ship(runs, by_run, dirs, ended_since=now - timedelta(seconds=LATE_LOG_SECONDS))
        self._kill_overdue_stops(slurm, runs, by_run, now)
        if seen.resubmit:
            from scheduler_core.runtime.reconcile import reconcile

            reconcile(resend=seen.resubmit, backends=[self.backend])
        return Observation(runs=seen.reports, nodes=by_pool)

    def _nodes(
        self,
        pools: list[NodePool],
        jobs: list[SlurmJob],
        seen_nodes: list[SlurmNode],
        prefix: str,
    ) -> dict[int, list[NodeSeen]]:
        """Each pool's nodes as its partition shows them (the run layer applies them)."""
        foreign = foreign_gpus(jobs, prefix)
        by_pool = {}
        for pool in pools:
            partition = target(pool).partition
            part = [n for n in seen_nodes if partition in n.partitions]
            by_pool[pool.pk] = nodes.nodes_seen(pool, part, foreign)
        return by_pool

    def _records(
        self, slurm: SlurmClient, runs: Sequence[LiveRun], by_run: dict[int, list[SlurmJob]]
    ) -> dict:
        """Completion records of the runs whose jobs squeue no longer lists."""
        gone = [int(r.external_id) for r in runs
                if r.run_id not in by_run and r.external_id.isdigit()]  # fmt: skip
        if not gone:
            return {}
        try:
            return slurm.ended_jobs(gone, jobcomp_file=self._jobcomp_file(slurm))
        except SlurmError as exc:
            logger.warning("could not read Slurm's completion records: %s", exc)
            return {}

    def _jobcomp_file(self, slurm: SlurmClient) -> str | None:
        if self._jobcomp is None:
            config = slurm.config()
            filetxt = config.get("JobCompType") == "jobcomp/filetxt"
            self._jobcomp = config.get("JobCompLoc", "") if filetxt else ""
        return self._jobcomp or None

    def _kill_overdue_stops(
        self,
        slurm: SlurmClient,
        runs: Sequence[LiveRun],
        by_run: dict[int, list[SlurmJob]],
        now: datetime,
    ) -> None:
        """Jobs of runs told to stop whose grace period (and a few seconds) is over."""
        stopping = [r.run_id for r in runs if r.state == "stopping" and r.run_id in by_run]
        if not stopping:
            return
        late = []
        for run_id, sent, grace in PodRun.objects.filter(pk__in=stopping).values_list(
            "pk", "stop_sent_at", "node__pool__grace_period"
        ):
            job = by_run[run_id][0]
            if sent and not job.ended and sent + timedelta(seconds=grace + 5) < now:
                late.append(job.root_id)
        if late:
            try:
                slurm.cancel(late)
            except SlurmError as exc:
                logger.warning("could not cancel Slurm jobs %s: %s", late, exc)


def whole_gang(launch: Launch) -> Launch | None:
    """The launch of every pod of the workload, when only some were handed now (a
    reconcile of some nodes only): one job runs the whole gang. None until every pod's
    run is recorded (a later start hands the rest)."""
    runs = list(
        PodRun.objects.filter(
            workload_id=launch.workload_id, state="starting", allocation__isnull=False
        ).select_related("node")
    )
    if len(runs) < launch.gang_size:
        return None
    specs = Launches([launch.workload_id])
    if not specs.wanted(launch.workload_id):
        return None
    return specs.launch(launch.workload_id, [specs.pod(run, run.node) for run in runs])


def foreign_gpus(jobs: Sequence[SlurmJob], prefix: str) -> dict[str, int]:
    """GPUs held on each node by running jobs Fairway did not start (by their tags)."""
    held: dict[str, int] = {}
    for job in jobs:
        if not job.running or job.comment.startswith(f"{prefix}:"):
            continue
        for name in job.nodes:
            count = len(job.gpus_by_node.get(name, ())) or job.gpus_per_node
            held[name] = held.get(name, 0) + count
    return held


def _overdue(runs: Sequence[LiveRun], by_run: dict[int, list[SlurmJob]], now: datetime) -> set[int]:
    """Starting runs without a job, recorded long enough ago that one should exist."""
    candidates = [r.run_id for r in runs if r.state == "starting" and r.run_id not in by_run]
    if not candidates:
        return set()
    cutoff = now - timedelta(seconds=submit_grace())
    return set(
        PodRun.objects.filter(pk__in=candidates, created_at__lt=cutoff).values_list("pk", flat=True)
    )


def _refuse(launch: Launch, reason: str) -> list[RunReport]:
    """Reports that the launch's pods could not start, and why."""
    now = timezone.now()
    return [RunReport(p.run_id, RunPhase.START_FAILED, now, reason=reason) for p in launch.pods]


def _cancel_quietly(job_id: int) -> None:
    try:
        client().cancel([job_id])
    except SlurmError as exc:
        logger.warning("could not cancel Slurm job %s after its grace period: %s", job_id, exc)
