"""What Slurm's jobs say of Fairway's live runs, as run reports (pure: no Django).

For each live run, its job is found by tag (tags.jobs_by_run):
- running: the run runs, with the GPU indices Slurm gave its pod on its node and the
  job id as its external id;
- ended: the run exited, with the job's exit code and signal (a heterogeneous job: the
  worst of its components); a node failure loses it;
- pending: nothing new (held jobs are released by submit.release_ready);
- not in `squeue` any more: the completion record says how it ended (sacct, or the
  jobcomp file); with no record either, a run that was running is lost, one that was
  stopping ended, and one still starting was never submitted or was forgotten by a
  restarted controller: it is handed back to be submitted again (`resubmit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from scheduler_core.runtime.executor import LiveRun, RunPhase, RunReport
from scheduler_core.runtime.executors.slurm.records import JobEnd, SlurmJob

LOST_STATES = frozenset({"NODE_FAIL", "BOOT_FAIL"})


@dataclass
class Seen:
    """What one look at Slurm found: reports, and runs to submit again."""

    reports: list[RunReport] = field(default_factory=list)
    resubmit: list[int] = field(default_factory=list)


def pod_devices(
    components: Sequence[SlurmJob], run: LiveRun, pods_on_node: Sequence[int]
) -> tuple[int, ...] | None:
    """The GPU indices Slurm gave `run`'s pod: its node's devices in the job, split in
    turn among the job's pods on that node (`pods_on_node`: their run ids in order)."""
    for job in components:
        devices = job.gpus_by_node.get(run.node_name)
        if devices is None:
            continue
        if len(pods_on_node) <= 1:
            return devices
        share = len(devices) // len(pods_on_node)
        index = pods_on_node.index(run.run_id) if run.run_id in pods_on_node else 0
        return devices[index * share : (index + 1) * share]
    return None


def _ended(components: Sequence[SlurmJob]) -> bool:
    return all(j.ended for j in components)


def _exit(components: Sequence[SlurmJob]) -> tuple[int | None, int | None, str]:
    """The worst exit of the job's components (code, signal, state)."""
    worst = max(components, key=lambda j: (j.exit_code or 0, j.signal or 0))
    return worst.exit_code, worst.signal, worst.state


def _signal_name(number: int | None) -> str | None:
    if not number:
        return None
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def report_job(
    run: LiveRun, components: Sequence[SlurmJob], pods_on_node: Sequence[int], now: datetime
) -> RunReport | None:
    """The report of a run whose job Slurm still lists (None: nothing new)."""
    external = str(components[0].root_id)
    if _ended(components):
        code, signal, state = _exit(components)
        if state in LOST_STATES:
            return RunReport(
                run.run_id, RunPhase.LOST, now, reason=f"Slurm job {external} ended {state}",
                external_id=external,
            )  # fmt: skip
        reason = None if state == "COMPLETED" else f"Slurm job {external} ended {state}"
        return RunReport(
            run.run_id, RunPhase.EXITED, now, exit_code=code, signal=_signal_name(signal),
            reason=reason, external_id=external,
        )  # fmt: skip
    if any(j.running for j in components) and run.state == "starting":
        return RunReport(
            run.run_id, RunPhase.RUNNING, now, external_id=external,
            devices=pod_devices(components, run, pods_on_node),
        )  # fmt: skip
    return None


def report_record(run: LiveRun, record: JobEnd, now: datetime) -> RunReport:
    """The report of a run whose job only its completion record still knows."""
    external = str(record.het_job_id or record.job_id)
    if record.state in LOST_STATES:
        return RunReport(
            run.run_id, RunPhase.LOST, now, reason=f"Slurm job {external} ended {record.state}",
            external_id=external,
        )  # fmt: skip
    ended = None if record.state == "COMPLETED" else f"Slurm job {external} ended {record.state}"
    return RunReport(
        run.run_id, RunPhase.EXITED, now, exit_code=record.exit_code,
        signal=_signal_name(record.signal), external_id=external, reason=ended,
    )  # fmt: skip


def look(
    runs: Sequence[LiveRun],
    by_run: Mapping[int, list[SlurmJob]],
    records: Mapping[int, JobEnd],
    *,
    overdue: set[int],
    now: datetime,
    gpu_counts: Mapping[int, int] | None = None,
) -> Seen:
    """Reports for `runs` from the jobs found by tag and the completion records by job
    id; `overdue`: the starting runs old enough that a job of theirs should exist;
    `gpu_counts`: GPUs each node offers Fairway (node id): indices Slurm reports beyond
    them (a node whose other GPUs jobs Fairway did not start hold) are not recorded,
    Fairway's own stay."""
    seen = Seen()
    on_node: dict[tuple[int, str], list[int]] = {}
    for run in runs:
        for job in by_run.get(run.run_id, ())[:1]:
            on_node.setdefault((job.root_id, run.node_name), []).append(run.run_id)
    for run in runs:
        components = by_run.get(run.run_id)
        if components:
            pods = on_node.get((components[0].root_id, run.node_name), [])
            report = report_job(run, components, sorted(pods), now)
            limit = (gpu_counts or {}).get(run.node_id)
            if report and report.devices and limit is not None and max(report.devices) >= limit:
                report = replace(report, devices=None)
            if report is not None:
                seen.reports.append(report)
            continue
        record = records.get(int(run.external_id)) if run.external_id.isdigit() else None
        if record is not None:
            seen.reports.append(report_record(run, record, now))
        elif run.state == "running":
            seen.reports.append(
                RunReport(
                    run.run_id, RunPhase.LOST, now,
                    reason=f"Slurm no longer knows job {run.external_id or '?'} "
                    "(nor any job tagged with this run)",
                )
            )  # fmt: skip
        elif run.state == "stopping":
            seen.reports.append(RunReport(run.run_id, RunPhase.EXITED, now, signal="KILL"))
        elif run.run_id in overdue:
            seen.resubmit.append(run.run_id)
    return seen
