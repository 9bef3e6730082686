"""Pods' output, from the files their Slurm jobs write (submit.log_path, on a directory
the nodes and Fairway share) into the log store the API, the CLI and the console read.
Each observe ships what was appended since the bytes stored (at most MAX_BYTES a run per
tick), before the run's end is reported, so that a finished pod's last lines arrive."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from scheduler_core.models import PodRun
from scheduler_core.runtime.executor import LiveRun
from scheduler_core.runtime.executors.slurm.records import SlurmJob
from scheduler_core.runtime.executors.slurm.submit import log_path
from scheduler_core.services.agents import record_log

logger = logging.getLogger(__name__)

MAX_BYTES = 1 << 20


def read_from(path: Path, offset: int, limit: int = MAX_BYTES) -> bytes:
    """Bytes of `path` from `offset` (none when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(limit)
    except OSError:
        return b""


def ship(
    runs: Sequence[LiveRun],
    by_run: Mapping[int, list[SlurmJob]],
    output_dirs: Mapping[int, Path],
    *,
    ended_since: datetime,
) -> int:
    """Store new output of every run whose job has started, and of runs that ended since
    `ended_since` (a pod's last lines may land after its end was seen); bytes stored.
    `output_dirs`: each pool's output directory, by pool id."""
    started = {
        r.run_id for r in runs if any(j.running or j.ended for j in by_run.get(r.run_id, ()))
    }
    ended = PodRun.objects.filter(
        node__pool_id__in=list(output_dirs), ended_at__gte=ended_since
    ).values_list("pk", flat=True)
    wanted = started | set(ended)
    if not wanted:
        return 0
    stored = 0
    for run in PodRun.objects.filter(pk__in=wanted).select_related("node"):
        directory = output_dirs.get(run.node.pool_id)
        if directory is None:
            continue
        data = read_from(log_path(directory, run.workload_id, run.pk), run.log_size)
        if data:
            record_log(node=run.node, run_id=run.pk, offset=run.log_size, data=data)
            stored += len(data)
    return stored
