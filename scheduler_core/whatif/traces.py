"""Job traces in the Philly columns (`timestamp` submission time UTC, `duration` seconds,
`num_gpus`, `cluster` the team; other columns are ignored) and the cluster they replay
on: nodes of equal size in one pool, one department deserving them all, and in it one
project per team whose deserved quota is in proportion to the team's size.

A job of more GPUs than a node holds runs as a gang of equal pods, as few as fit a node
(16 GPUs on 8-GPU nodes: 2 pods of 8; 12: 2 of 6).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scheduler_core.engine.simulation import Simulation
from scheduler_core.whatif.scenarios import Scenario, Step, parse_scenario

POOL = "default"
DEPARTMENT = "teams"
TIMESTAMP_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M")


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job: submitted `submitted` seconds after the window opens, runs `duration`
    seconds on `gpus` GPUs, for `team`."""

    name: str
    team: str
    submitted: float
    duration: float
    gpus: int


@dataclass(frozen=True, slots=True)
class TraceCluster:
    """The cluster a trace replays on and each team's deserved GPUs."""

    nodes: int
    gpus_per_node: int
    quotas: Mapping[str, float]
    # scheduler settings of the pool (FORMAT.md's `config` keys), e.g.
    # {"min_guaranteed_runtime": 3600}; the policy is always quota
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        """GPUs in all."""
        return self.nodes * self.gpus_per_node


def parse_time(text: str) -> datetime:
    """A UTC time as the trace or the command line writes it."""
    for fmt in TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"not a time: {text!r} (expected e.g. 2017-10-25T19:00)")


COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")
"""The trace columns the replay reads (others are ignored)."""


class TraceError(ValueError):
    """A trace (or team sizes) file that cannot be read, saying where and why."""


def read_trace(
    path: Path, *, start: datetime, hours: float, cap_hours: float | None = None
) -> list[TraceJob]:
    """The jobs of the trace file at `path` (see parse_trace)."""
    with path.open(newline="") as handle:
        return parse_trace(handle, start=start, hours=hours, cap_hours=cap_hours)


def parse_trace(
    lines: Iterable[str], *, start: datetime, hours: float, cap_hours: float | None = None
) -> list[TraceJob]:
    """The jobs submitted in [start, start + hours), in submission order, durations
    capped at `cap_hours`; jobs asking no GPU or running no time are left out. A file
    without the Philly columns, or a row that does not read, raises TraceError naming the
    line."""
    window = hours * 3600.0
    cap = math.inf if cap_hours is None else cap_hours * 3600.0
    jobs: list[TraceJob] = []
    reader = csv.DictReader(lines)
    try:
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(
                f"the trace has no column {', '.join(missing)}: its first line must name the "
                f"columns {', '.join(COLUMNS)} (Philly's; others are ignored)"
            )
        for row in reader:
            submitted = (parse_time(row["timestamp"]) - start).total_seconds()
            gpus = int(float(row["num_gpus"]))
            duration = float(row["duration"])
            if not math.isfinite(duration):
                raise ValueError(f"duration {row['duration']!r} is not a number of seconds")
            duration = min(duration, cap)
            if 0 <= submitted < window and gpus > 0 and duration > 0:
                jobs.append(TraceJob("", row["cluster"], submitted, duration, gpus))
    except TraceError:
        raise
    except (TypeError, ValueError, OverflowError, csv.Error) as exc:
        raise TraceError(f"line {reader.line_num} of the trace: {_problem(exc)}") from None
    jobs.sort(key=lambda j: j.submitted)
    return [
        TraceJob(f"j{i:05d}-{j.team}", j.team, j.submitted, j.duration, j.gpus)
        for i, j in enumerate(jobs)
    ]


def _problem(exc: Exception) -> str:
    if isinstance(exc, TypeError):  # a short row: DictReader fills it with None
        return "a value is missing"
    text = str(exc)
    if text.startswith(("could not convert", "invalid literal")):
        return f"not a number: {text.rsplit(': ', 1)[-1]}"
    return text


def read_team_nodes(path: Path) -> dict[str, int]:
    """Nodes per team from a `vc,node num` CSV file (philly_vc.csv)."""
    with path.open(newline="") as handle:
        return parse_team_nodes(handle)


def parse_team_nodes(lines: Iterable[str]) -> dict[str, int]:
    """Nodes per team from `vc,node num` CSV lines; TraceError says what is wrong."""
    reader = csv.DictReader(lines)
    sizes: dict[str, int] = {}
    try:
        if not {"vc", "node num"} <= set(reader.fieldnames or []):
            raise TraceError("the team sizes need the columns vc,node num (philly_vc.csv's)")
        for row in reader:
            nodes = int(row["node num"])
            if nodes < 0:
                raise ValueError(f"{nodes} nodes")
            sizes[row["vc"]] = nodes
    except TraceError:
        raise
    except (TypeError, ValueError, csv.Error) as exc:
        raise TraceError(f"line {reader.line_num} of the team sizes: {_problem(exc)}") from None
    return sizes


def team_quotas(
    teams: Iterable[str], gpus: int, team_nodes: Mapping[str, int] | None = None
) -> dict[str, float]:
    """Each team's deserved GPUs: `gpus` divided in proportion to its nodes (a team
    missing from `team_nodes` deserves none), or equally without them."""
    names = sorted(set(teams))
    weights = {t: float(team_nodes.get(t, 0)) if team_nodes else 1.0 for t in names}
    total = sum(weights.values())
    return {t: (gpus * w / total if total else 0.0) for t, w in weights.items()}


def pod_shape(gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """(pods, GPUs per pod) for a job: as few equal pods as fit a node each."""
    pods = max(1, math.ceil(gpus / gpus_per_node))
    while gpus % pods:
        pods += 1
    return pods, gpus // pods


def fits(job: TraceJob, cluster: TraceCluster) -> bool:
    """Whether the job fits the empty cluster at all."""
    pods, per_pod = pod_shape(job.gpus, cluster.gpus_per_node)
    return per_pod <= cluster.gpus_per_node and pods <= cluster.nodes


def trace_slice(
    jobs: list[TraceJob],
    nodes: int,
    gpus_per_node: int,
    team_nodes: Mapping[str, int] | None,
    config: Mapping[str, Any] | None = None,
) -> tuple[list[TraceJob], TraceCluster]:
    """The cluster of `nodes` x `gpus_per_node` GPUs whose teams deserve its GPUs as
    `team_quotas` divides them, with pool settings `config`, and the jobs that fit it."""
    quotas = team_quotas((j.team for j in jobs), nodes * gpus_per_node, team_nodes)
    cluster = TraceCluster(nodes, gpus_per_node, quotas, config=dict(config or {}))
    return [j for j in jobs if fits(j, cluster)], cluster


def trace_scenario(
    name: str, jobs: list[TraceJob], cluster: TraceCluster, step_seconds: float
) -> Scenario:
    """The cluster, its projects and a step every `step_seconds` up to the last arrival,
    each submitting the jobs that arrived since the step before (`trace_steps` adds the
    steps after it)."""
    steps: list[dict[str, Any]] = []
    index = 0
    while index < len(jobs):
        at = len(steps) * step_seconds
        events = []
        while index < len(jobs) and jobs[index].submitted <= at:
            events.append({"submit": _workload(jobs[index], cluster)})
            index += 1
        steps.append({"at": at, "events": events})
    document: dict[str, Any] = {
        "name": name,
        "description": "a job trace replayed on a synthetic cluster",
        "config": {**cluster.config, "policy": "quota"},
        "pools": [{"name": POOL}],
        "nodes": [
            {"name": "node", "count": cluster.nodes, "pool": POOL, "gpus": cluster.gpus_per_node}
        ],
        "departments": [{"name": DEPARTMENT, "quota": {POOL: {"gpus": cluster.gpus}}}],
        "projects": [
            {"name": team, "department": DEPARTMENT, "quota": {POOL: {"gpus": gpus}}}
            for team, gpus in cluster.quotas.items()
        ],
        "steps": steps,
    }
    return parse_scenario(document, name)


def _workload(job: TraceJob, cluster: TraceCluster) -> dict[str, Any]:
    pods, per_pod = pod_shape(job.gpus, cluster.gpus_per_node)
    return {
        "name": job.name,
        "project": job.team,
        "pods": pods,
        "gpus": per_pod,
        "submitted_at": job.submitted,
        "duration": job.duration,
    }


def trace_steps(scenario: Scenario, sim: Simulation, step_seconds: float) -> Iterator[Step]:
    """The scenario's steps, then one every `step_seconds` while anything runs (a job
    still pending once nothing runs can never start: the replay stops there)."""
    yield from scenario.steps
    index = len(scenario.steps)
    at = scenario.steps[-1].at if scenario.steps else 0.0
    while any(w.pods for w in sim.active.values()):
        at += step_seconds
        yield Step(index, at)
        index += 1
