"""The buckets of GPU usage history (GpuUsageRollup): their sizes, where a time falls, and
how far the rollup has got. Shared by services.gpu_usage (writes) and selectors.gpu_usage
(reads)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db.models import Max

from scheduler_core.models import GpuUsageRollup

MINUTE, HOUR = 60, 3600


def floor_time(at: datetime, seconds: int) -> datetime:
    """`at` rounded down to a multiple of `seconds` since the epoch (UTC)."""
    epoch = int(at.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, tz=UTC)


def rolled_until(resolution: int) -> datetime | None:
    """The end of the newest bucket rolled up at `resolution`, or None."""
    newest = GpuUsageRollup.objects.filter(resolution=resolution).aggregate(m=Max("start"))["m"]
    return None if newest is None else newest + timedelta(seconds=resolution)
