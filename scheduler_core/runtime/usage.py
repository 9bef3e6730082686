"""GPU usage accounting: every settings.USAGE_SAMPLE_INTERVAL seconds the cycle writes one
UsageSample per project and department per pool (GPUs held now x seconds since the last
sample), which time-based fairshare reads back."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max

from scheduler_core.models import UsageSample


def usage_due(now: datetime) -> datetime | None:
    """Start of the usage interval to record now, or None when the last one is recent."""
    last_end = UsageSample.objects.aggregate(last=Max("interval_end"))["last"]
    interval = timedelta(seconds=settings.USAGE_SAMPLE_INTERVAL)
    if last_end is None:
        return now - interval
    if now - last_end < interval:
        return None
    # After downtime, count at most two intervals: nobody knows what ran meanwhile.
    return max(last_end, now - 2 * interval)


def record_usage(
    *, start: datetime, end: datetime, held: Iterable[tuple[int, int, int, float]]
) -> list[UsageSample]:
    """Write usage samples for [start, end) from GPUs held now.

    `held` yields (pool_id, department_id, project_id, gpus) per running pod.
    """
    seconds = (end - start).total_seconds()
    if seconds <= 0:
        return []
    projects: dict[tuple[int, int], float] = defaultdict(float)
    departments: dict[tuple[int, int], float] = defaultdict(float)
    for pool_id, department_id, project_id, gpus in held:
        projects[(pool_id, project_id)] += gpus
        departments[(pool_id, department_id)] += gpus
    samples = [
        UsageSample(
            pool_id=pool_id,
            project_id=owner,
            interval_start=start,
            interval_end=end,
            gpu_seconds=gpus * seconds,
        )
        for (pool_id, owner), gpus in projects.items()
    ] + [
        UsageSample(
            pool_id=pool_id,
            department_id=owner,
            interval_start=start,
            interval_end=end,
            gpu_seconds=gpus * seconds,
        )
        for (pool_id, owner), gpus in departments.items()
    ]
    return UsageSample.objects.bulk_create(samples)
