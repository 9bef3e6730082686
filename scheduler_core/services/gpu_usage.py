"""GPU usage history (docs/usage.md): the samples agents send (GpuSample, one per GPU every
AGENT_USAGE_INTERVAL seconds, kept AGENT_USAGE_RETENTION seconds) rolled up into one row
per GPU, minute and holding workload, and the minutes into hours (GpuUsageRollup).

A sample is attributed to the runs that held its device when it was taken (PodRun's
`gpu_devices` from its creation to its end), shared among them by their GPU fractions; the
part no run held goes to a row without a workload. Every figure of a row is a mean over
its bucket, so rows add up: a pool's held GPUs at a minute is the sum of its rows' held
GPUs. The runtime tick calls gpu_usage_roll_up at most once a minute."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Min, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from scheduler_core.models import GpuSample, GpuUsageRollup, Node, PodRun
from scheduler_core.models.agents import LIVE_RUN_STATES
from scheduler_core.usage_buckets import HOUR, MINUTE, floor_time, rolled_until

CHUNK = timedelta(minutes=10)  # raw samples read per pass, to bound memory
NEVER = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Holding:
    """A run's share of one device from `since` until `until`."""

    workload_id: int
    project_id: int
    share: float
    since: datetime
    until: datetime


@dataclass
class _Bucket:
    """Sums over the samples of one row (node, GPU, minute, workload)."""

    project_id: int | None = None
    samples: int = 0
    held: float = 0.0
    used: float = 0.0
    memory_used: float = 0.0
    memory_total: float = 0.0


@dataclass
class _Minutes:
    """Rows being built, and how many samples each device had per minute."""

    rows: dict[tuple[int, int, datetime, int | None], _Bucket] = field(default_factory=dict)
    device_samples: dict[tuple[int, int, datetime], int] = field(
        default_factory=lambda: defaultdict(int)
    )


def _run_end(
    state: str, ended_at: datetime | None, stop_sent_at: datetime | None, created_at: datetime
) -> datetime:
    """When a run stopped holding its devices (NEVER while it is live)."""
    if ended_at is not None:
        return ended_at
    if state in LIVE_RUN_STATES:
        return NEVER
    return stop_sent_at or created_at


def holdings(node_ids: set[int], start: datetime, end: datetime) -> dict[tuple, list[Holding]]:
    """The runs that held each device (node id, GPU index) at some time in [start, end)."""
    runs = PodRun.objects.filter(node_id__in=node_ids, created_at__lt=end).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gte=start)
    )
    found: dict[tuple, list[Holding]] = defaultdict(list)
    for row in runs.values_list(
        "node_id", "workload_id", "workload__project_id", "gpu_devices", "gpu_fraction",
        "created_at", "ended_at", "stop_sent_at", "state",
    ):  # fmt: skip
        node_id, workload_id, project_id, devices, fraction, created, ended, stop_sent, state = row
        until = _run_end(state, ended, stop_sent, created)
        for index in devices or ():
            if isinstance(index, int):
                found[(node_id, index)].append(
                    Holding(workload_id, project_id, min(max(fraction, 0.0), 1.0), created, until)
                )
    return found


def _shares(held_by: list[Holding], at: datetime) -> list[tuple[int | None, int | None, float]]:
    """(workload, project, share) of a device at `at`, the unheld rest last."""
    holders = [h for h in held_by if h.since <= at < h.until]
    total = sum(h.share for h in holders)
    scale = 1.0 / total if total > 1.0 else 1.0
    shares: list[tuple[int | None, int | None, float]] = [
        (h.workload_id, h.project_id, h.share * scale) for h in holders
    ]
    rest = 1.0 - total * scale
    if rest > 1e-9:
        shares.append((None, None, rest))
    return shares


def _add_sample(minutes: _Minutes, sample: tuple, held_by: list[Holding]) -> None:
    node_id, index, at, utilization, memory_used, memory_total = sample
    minute = at.replace(second=0, microsecond=0)  # (UTC: whole minutes everywhere)
    minutes.device_samples[(node_id, index, minute)] += 1
    for workload_id, project_id, share in _shares(held_by, at):
        row = minutes.rows.setdefault((node_id, index, minute, workload_id), _Bucket(project_id))
        row.samples += 1
        row.held += share if workload_id is not None else 0.0
        row.used += share * min(max(utilization, 0.0), 100.0) / 100.0
        row.memory_used += share * memory_used
        row.memory_total += share * memory_total


def _minute_rows(start: datetime, end: datetime) -> list[GpuUsageRollup]:
    """Rows for the minutes in [start, end) from the raw samples."""
    samples = list(
        GpuSample.objects.filter(at__gte=start, at__lt=end).values_list(
            "node_id", "index", "at", "utilization", "memory_used_mib", "memory_total_mib"
        )
    )
    node_ids = {s[0] for s in samples}
    pools = dict(Node.objects.filter(pk__in=node_ids).values_list("pk", "pool_id"))
    held = holdings(node_ids, start, end)
    minutes = _Minutes()
    for sample in samples:
        _add_sample(minutes, sample, held.get((sample[0], sample[1]), []))
    rows = []
    for (node_id, index, minute, workload_id), b in minutes.rows.items():
        n = minutes.device_samples[(node_id, index, minute)]
        rows.append(
            GpuUsageRollup(
                resolution=MINUTE, start=minute, node_id=node_id, pool_id=pools[node_id],
                index=index, workload_id=workload_id, project_id=b.project_id,
                samples=b.samples, held_gpus=b.held / n, used_gpus=b.used / n,
                memory_used_mib=b.memory_used / n, memory_total_mib=b.memory_total / n,
            )
        )  # fmt: skip
    return rows


def _roll_up_minutes(now: datetime) -> int:
    """Roll up every minute that ended GPU_USAGE_ROLLUP_LAG seconds ago and is not yet."""
    end = floor_time(now - timedelta(seconds=settings.GPU_USAGE_ROLLUP_LAG), MINUTE)
    oldest_kept = now - timedelta(seconds=settings.AGENT_USAGE_RETENTION)
    start = rolled_until(MINUTE)
    if start is None:
        first = GpuSample.objects.filter(at__gte=oldest_kept).aggregate(m=Min("at"))["m"]
        start = floor_time(first or end, MINUTE)
    start = max(start, floor_time(oldest_kept, MINUTE))
    written = 0
    while start < end:
        chunk_end = min(end, start + CHUNK)
        rows = _minute_rows(start, chunk_end)
        GpuUsageRollup.objects.bulk_create(rows, ignore_conflicts=True)
        written += len(rows)
        start = chunk_end
    return written


def _roll_up_hours() -> int:
    """Roll up every hour whose minutes are all rolled up, from the minute rows."""
    minutes_done = rolled_until(MINUTE)
    if minutes_done is None:
        return 0
    end = floor_time(minutes_done, HOUR)
    start = rolled_until(HOUR)
    if start is None:
        first = GpuUsageRollup.objects.filter(resolution=MINUTE).aggregate(m=Min("start"))["m"]
        start = floor_time(first, HOUR)
    if start >= end:
        return 0
    grouped = (
        GpuUsageRollup.objects.filter(resolution=MINUTE, start__gte=start, start__lt=end)
        .annotate(hour=TruncHour("start", tzinfo=UTC))
        .values("hour", "node_id", "pool_id", "index", "workload_id", "project_id")
        .annotate(
            n=Sum("samples"), held=Sum("held_gpus"), used=Sum("used_gpus"),
            memory_used=Sum("memory_used_mib"), memory_total=Sum("memory_total_mib"),
        )
        .order_by()
    )  # fmt: skip
    per_hour = HOUR // MINUTE  # minutes without samples count as nothing held
    rows = [
        GpuUsageRollup(
            resolution=HOUR, start=g["hour"], node_id=g["node_id"], pool_id=g["pool_id"],
            index=g["index"], workload_id=g["workload_id"], project_id=g["project_id"],
            samples=g["n"], held_gpus=g["held"] / per_hour, used_gpus=g["used"] / per_hour,
            memory_used_mib=g["memory_used"] / per_hour,
            memory_total_mib=g["memory_total"] / per_hour,
        )
        for g in grouped
    ]  # fmt: skip
    GpuUsageRollup.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def gpu_usage_prune(*, now: datetime) -> None:
    """Drop minute and hour rows past GPU_USAGE_MINUTE_RETENTION / GPU_USAGE_HOUR_RETENTION."""
    for resolution, keep in (
        (MINUTE, settings.GPU_USAGE_MINUTE_RETENTION),
        (HOUR, settings.GPU_USAGE_HOUR_RETENTION),
    ):
        GpuUsageRollup.objects.filter(
            resolution=resolution, start__lt=now - timedelta(seconds=float(keep))
        ).delete()


def gpu_usage_roll_up(*, now: datetime | None = None) -> int:
    """Roll up the raw samples into minutes and the minutes into hours, then prune; the
    number of rows written. Safe to call again: finished buckets are not rewritten."""
    now = now or timezone.now()
    with transaction.atomic():
        written = _roll_up_minutes(now)
        written += _roll_up_hours()
        gpu_usage_prune(now=now)
    return written
