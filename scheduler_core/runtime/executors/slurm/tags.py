"""How Fairway finds its jobs in Slurm: by tag, not only by job id (a restarted
slurmctld can lose the last seconds of submissions and hand their ids to other jobs).

A job's name is `<prefix>-w<workload id>-r<first run id>` and its comment
`<prefix>:w=<workload id>;runs=<run id>,<run id>,...`: the runs (pods) it serves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from scheduler_core.runtime.executors.slurm.records import SlurmJob

_COMMENT = re.compile(r"^(?P<prefix>[\w.-]+):w=(?P<w>\d+);runs=(?P<runs>[\d,]+)$")


def job_name(prefix: str, workload_id: int, run_ids: Sequence[int]) -> str:
    return f"{prefix}-w{workload_id}-r{min(run_ids)}"


def job_comment(prefix: str, workload_id: int, run_ids: Sequence[int]) -> str:
    return f"{prefix}:w={workload_id};runs={','.join(str(r) for r in sorted(run_ids))}"


def runs_of(job: SlurmJob, prefix: str) -> tuple[int, ...]:
    """The Fairway runs a job serves (none: not one of this installation's jobs)."""
    match = _COMMENT.match(job.comment.strip())
    if match is None or match.group("prefix") != prefix:
        return ()
    return tuple(int(r) for r in match.group("runs").split(",") if r)


def jobs_by_run(jobs: Iterable[SlurmJob], prefix: str) -> dict[int, list[SlurmJob]]:
    """Each run's job entries (every component of a heterogeneous job), found by tag.
    Where a tag was submitted twice (a resubmission after a lost one), the newest job
    counts."""
    groups: dict[int, list[SlurmJob]] = {}
    for job in jobs:
        groups.setdefault(job.root_id, []).append(job)
    found: dict[int, list[SlurmJob]] = {}
    for root in sorted(groups):
        components = sorted(groups[root], key=lambda j: j.het_job_offset)
        runs = next((r for j in components if (r := runs_of(j, prefix))), ())
        for run_id in runs:
            found[run_id] = components
    return found
