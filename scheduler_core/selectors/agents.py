"""Reads of what node agents report: the latest GPU samples, and pods' logs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from scheduler_core.models import (
    Allocation,
    GpuSample,
    JoinToken,
    LogChunk,
    NodePool,
    PodRun,
    RunUsageSample,
    Workload,
)

MAX_LOG_BYTES = 1024 * 1024
"""At most this much log per pod in one answer; `next_offset` says where to go on."""


def join_tokens_of(pool: NodePool):
    """A pool's join tokens, newest first."""
    return JoinToken.objects.filter(pool=pool).select_related("created_by").order_by("-pk")


def latest_gpu_samples(node_ids: Iterable[int] | None = None) -> dict[int, list[GpuSample]]:
    """Each node's latest sample of each of its GPUs (within a few usage intervals: a GPU
    not reported lately has none), by node id, GPUs in index order. One query."""
    since = timezone.now() - timedelta(seconds=max(60.0, 3 * settings.AGENT_USAGE_INTERVAL))
    samples = GpuSample.objects.filter(at__gte=since).select_related("node")
    if node_ids is not None:
        samples = samples.filter(node_id__in=list(node_ids))
    latest: dict[tuple[int, int], GpuSample] = {}
    for sample in samples.order_by("node_id", "index", "at"):
        latest[(sample.node_id, sample.index)] = sample
    by_node: dict[int, list[GpuSample]] = {}
    for (node_id, _), sample in sorted(latest.items()):
        by_node.setdefault(node_id, []).append(sample)
    return by_node


@dataclass(frozen=True)
class PodLog:
    """Bytes `offset`..`next_offset` of the newest run of one pod, as text."""

    pod: str
    run: PodRun
    offset: int
    next_offset: int
    text: str


def _newest_runs(workload: Workload, pod: tuple[str, int] | None) -> list[PodRun]:
    runs = (
        PodRun.objects.filter(workload=workload)
        .select_related("node")
        .order_by("group", "pod_index", "-pk")
    )
    if pod is not None:
        runs = runs.filter(group=pod[0], pod_index=pod[1])
    newest: dict[tuple[str, int], PodRun] = {}
    for run in runs:
        newest.setdefault((run.group, run.pod_index), run)
    return list(newest.values())


def _read(run: PodRun, start: int, end: int) -> bytes:
    """Bytes `start`..`end` of the run's stored log (chunks are contiguous)."""
    first = (
        LogChunk.objects.filter(run=run, offset__lte=start)
        .order_by("-offset")
        .values_list("offset", flat=True)
        .first()
    )
    chunks = LogChunk.objects.filter(run=run, offset__gte=first or 0, offset__lt=end).order_by(
        "offset"
    )
    data = b"".join(bytes(c.data) for c in chunks)
    base = first or 0
    return data[start - base : end - base]


def _tail(run: PodRun, start: int, lines: int) -> tuple[int, bytes]:
    """The last `lines` lines of the run's log from byte `start` on (at most MAX_LOG_BYTES):
    their first byte and the bytes. Reads chunks from the end until it has enough."""
    end = run.log_size
    parts: list[bytes] = []
    read_from = end
    newlines = 0
    chunks = LogChunk.objects.filter(run=run).order_by("-offset").values_list("offset", "data")
    for offset, data in chunks.iterator(chunk_size=50):
        parts.append(bytes(data))
        read_from = offset
        newlines += bytes(data).count(b"\n")
        if newlines > lines or end - offset >= MAX_LOG_BYTES or offset <= start:
            break
    data = b"".join(reversed(parts))
    cut = max(start, end - MAX_LOG_BYTES, read_from) - read_from
    data = data[cut:]
    body = data[:-1] if data.endswith(b"\n") else data
    keep = body.split(b"\n")[-lines:]
    tail = b"\n".join(keep) + (b"\n" if data.endswith(b"\n") else b"")
    return end - len(tail), tail


def workload_logs(
    *, workload: Workload, pod: tuple[str, int] | None = None, since: int = 0,
    tail: int | None = None,
) -> list[PodLog]:  # fmt: skip
    """The output of the newest run of each pod (or of `pod`, (group, index)), from byte
    `since` on, or only its last `tail` lines; at most MAX_LOG_BYTES per pod."""
    logs = []
    for run in _newest_runs(workload, pod):
        start = min(since, run.log_size)
        if tail is not None:
            start, data = _tail(run, start, tail)
        else:
            data = _read(run, start, min(run.log_size, start + MAX_LOG_BYTES))
        text = data.decode("utf-8", errors="replace")
        logs.append(PodLog(run.pod, run, start, start + len(data), text))
    return logs


def pod_runs_of(workload: Workload) -> dict[str, list[PodRun]]:
    """Every run of the workload's pods, by pod ("main-0"), newest first, each numbered
    from its pod's first run (`number`: 1, 2, ...). One query."""
    runs = (
        PodRun.objects.filter(workload=workload)
        .select_related("node")
        .order_by("group", "pod_index", "-pk")
    )
    by_pod: dict[str, list[PodRun]] = {}
    for run in runs:
        by_pod.setdefault(run.pod, []).append(run)
    for pod_runs in by_pod.values():
        for newer, run in enumerate(pod_runs):
            run.number = len(pod_runs) - newer
    return by_pod


def latest_run_usage(run_ids: Iterable[int]) -> dict[int, RunUsageSample]:
    """Each run's latest CPU and memory sample, by run id (within a few usage intervals)."""
    since = timezone.now() - timedelta(seconds=max(60.0, 3 * settings.AGENT_USAGE_INTERVAL))
    samples = RunUsageSample.objects.filter(run_id__in=list(run_ids), at__gte=since)
    latest: dict[int, RunUsageSample] = {}
    for sample in samples.order_by("run_id", "at"):
        latest[sample.run_id] = sample
    return latest


IDLE_UTILIZATION = 5.0
"""Below this percent busy, an allocated GPU counts as idle..."""
IDLE_AFTER = timedelta(minutes=1)
"""...in a sample taken at least this long after it was allocated."""


@dataclass(frozen=True)
class DeviceUsage:
    """One GPU's latest sample, and whether it is allocated but idle."""

    utilization: float
    memory_used_mib: float
    memory_total_mib: float
    at: datetime
    idle: bool


def device_usage(node_ids: Iterable[int]) -> dict[tuple[int, int], DeviceUsage]:
    """The latest usage of each GPU of `node_ids`, by (node id, index). A device is idle when
    a pod has held it for over IDLE_AFTER and its latest sample since then is under
    IDLE_UTILIZATION percent. Two queries."""
    node_ids = list(node_ids)
    allocated: dict[tuple[int, int], datetime] = {}
    allocations = Allocation.objects.filter(node_id__in=node_ids).values_list(
        "node_id", "gpu_devices", "created_at"
    )
    for node_id, devices, created_at in allocations:
        for index in devices or []:
            key = (node_id, index)
            allocated[key] = min(created_at, allocated.get(key, created_at))
    usage = {}
    for node_id, samples in latest_gpu_samples(node_ids).items():
        for s in samples:
            since = allocated.get((node_id, s.index))
            idle = (
                since is not None
                and s.at - since >= IDLE_AFTER
                and s.utilization < IDLE_UTILIZATION
            )
            usage[(node_id, s.index)] = DeviceUsage(
                s.utilization, s.memory_used_mib, s.memory_total_mib, s.at, idle
            )
    return usage
