"""Pods' output, from the files their Slurm jobs write (submit.log_path, on a directory
the nodes and Fairway share) into the log store the API, the CLI and the console read.
Each observe ships what was appended since the bytes stored (at most MAX_BYTES a run per
tick), before the run's end is reported, so that a finished pod's last lines arrive."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from scheduler_core.models import Node, PodRun
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
) -> int:
    """Store new output of every run whose job has started; bytes stored in all.
    `output_dirs`: each pool's output directory, by pool id."""
    started = [r for r in runs if any(j.running or j.ended for j in by_run.get(r.run_id, ()))]
    if not started:
        return 0
    sizes = dict(
        PodRun.objects.filter(pk__in=[r.run_id for r in started]).values_list("pk", "log_size")
    )
    nodes = {n.pk: n for n in Node.objects.filter(pk__in={r.node_id for r in started})}
    stored = 0
    for run in started:
        node = nodes.get(run.node_id)
        directory = output_dirs.get(node.pool_id) if node else None
        if node is None or directory is None:
            continue
        offset = sizes.get(run.run_id, 0)
        data = read_from(log_path(directory, run.workload_id, run.run_id), offset)
        if data:
            record_log(node=node, run_id=run.run_id, offset=offset, data=data)
            stored += len(data)
    return stored
