"""What each replayed job records and how its record becomes figures.

Every job, on either side, runs the same command: it appends `s <time>` when it starts,
sleeps its compressed duration, then appends `e <time>`; a job stopped early (preempted)
appends `k <time>` from its SIGTERM trap. Only the gang's first rank writes. The records,
with the submission times the driver noted, are replayed in time order into the same
RunTally the what-if replays use, in trace time (real seconds x compression), so both
sides and the engine's own simulation are measured by one ruler.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from scheduler_core.whatif.run_figures import RunFigures, RunTally
from scheduler_core.whatif.traces import TraceCluster, TraceJob


def job_command(stamp: Path, seconds: float) -> str:
    """The shell command a replayed job runs (see the module docstring)."""
    f = shlex.quote(str(stamp))
    return (
        f'if [ "${{FAIRWAY_RANK:-0}}" != 0 ]; then exec sleep {seconds:.3f}; fi; '
        f'echo "s $(date +%s.%N)" >> {f}; '
        f"trap 'echo \"k $(date +%s.%N)\" >> {f}; exit 143' TERM USR1; "
        f"sleep {seconds:.3f} & wait $!; "
        f'echo "e $(date +%s.%N)" >> {f}'
    )


@dataclass(frozen=True, slots=True)
class Submitted:
    """A job as the driver submitted it: when (epoch seconds) and where it stamps."""

    job: TraceJob
    at: float
    stamp: Path
    job_id: int | None = None  # Slurm's id, where the driver submitted it to Slurm itself


def read_stamps(path: Path) -> list[tuple[str, float]]:
    """The (kind, epoch seconds) lines of one job's stamp file."""
    found = []
    try:
        text = path.read_text()
    except OSError:
        return []
    for line in text.splitlines():
        kind, _, value = line.partition(" ")
        try:
            found.append((kind, float(value)))
        except ValueError:
            continue
    return found


def _runs(stamps: list[tuple[str, float]]) -> list[tuple[float, int, str]]:
    """A job's starts, preemptions and its finish from its stamps. A run that ended
    before the job's last start was thrown away: stopped by its trap (`k`), killed
    without it (a start follows a start), or done just as Fairway preempted it (an `e`
    followed by a start: its workload was re-queued and ran again)."""
    last_start = max((i for i, (kind, _) in enumerate(stamps) if kind == "s"), default=-1)
    found: list[tuple[float, int, str]] = []
    running = False
    for index, (kind, at) in enumerate(stamps):
        if kind == "s":
            if running:
                found.append((at, 1, "preempt"))
            found.append((at, 2, "start"))
            running = True
        elif running and (kind == "k" or index < last_start):
            found.append((at, 1, "preempt"))
            running = False
        elif running and kind == "e":
            found.append((at, 1, "finish"))
            running = False
    return found


def tally(
    submitted: list[Submitted], cluster: TraceCluster, t0: float, compression: float
) -> RunFigures:
    """The figures of one side's run, from its jobs' stamps (times from `t0`, in trace
    seconds)."""
    events: list[tuple[float, int, str, Submitted]] = []
    for item in submitted:
        events.append((item.at, 0, "submit", item))
        events += [(at, order, kind, item) for at, order, kind in _runs(read_stamps(item.stamp))]
    events.sort(key=lambda e: (e[0], e[1]))
    run = RunTally(capacity_gpus=cluster.gpus, shares=cluster.quotas)
    for at, _, kind, item in events:
        trace_at = max(at - t0, 0.0) * compression
        name, job = item.job.name, item.job
        if kind == "submit":
            run.submit(trace_at, name, job.team, job.gpus, job.duration)
        elif kind == "start":
            run.start(trace_at, name, job.gpus)
        elif kind == "preempt":
            run.preempt(trace_at, name)
        else:
            run.finish(trace_at, name)
    return run.figures()
