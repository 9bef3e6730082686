"""Two hours of GPU samples from a node agent, sent through the service the agent
consumer calls (services.agents.record_usage), and the runs that held the GPUs meanwhile."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from scheduler_core.choices import Backend
from scheduler_core.models import Node, PodRun, Project, Workload
from scheduler_core.models.agents import PodRunState
from scheduler_core.schemas.agents import GpuUsage
from scheduler_core.services.agents import record_usage
from scheduler_core.usage_buckets import HOUR, floor_time
from tests import factories

EVERY = timedelta(seconds=30)
TOTAL_MIB = 81920.0


@dataclass
class UsageStory:
    """GPU 0 of `node`: `train` (vision) held it for the first hour, 90 % busy; GPU 1:
    `eval` (nlp) holds half of it throughout, the device 4 % busy."""

    start: datetime  # an hour boundary, three hours ago
    node: Node
    train: Workload
    eval: Workload


def holding_run(
    workload: Workload, node: Node, devices: list[int], *, since: datetime, until=None,
    fraction: float = 1.0,
) -> PodRun:  # fmt: skip
    """A run of `workload` that held `devices` from `since` (until `until`, or still)."""
    epoch = PodRun.objects.filter(node=node).count() + 1
    run = PodRun.objects.create(
        workload=workload, node=node, pod_index=0, epoch=epoch, gpu_devices=devices,
        gpu_fraction=fraction,
        state=PodRunState.EXITED if until else PodRunState.RUNNING, ended_at=until,
    )  # fmt: skip
    PodRun.objects.filter(pk=run.pk).update(created_at=since)
    return run


def send_samples(node: Node, start: datetime, end: datetime, busy) -> None:
    """A usage report every 30 s in [start, end); `busy(index, at)` -> percent."""
    at = start
    while at < end:
        gpus = [
            GpuUsage(
                index=i, utilization=busy(i, at), memory_used_mib=40960.0 if i == 0 else 8192.0,
                memory_total_mib=TOTAL_MIB,
            )
            for i in (0, 1)
        ]  # fmt: skip
        record_usage(node=node, at=at, gpus=gpus, runs=[])
        at += EVERY


def usage_story(vision: Project, nlp: Project, settings) -> UsageStory:
    """The story above, its samples stored (AGENT_USAGE_RETENTION widened to a day)."""
    settings.AGENT_USAGE_RETENTION = 86400.0
    start = floor_time(timezone.now(), HOUR) - timedelta(hours=3)
    pool = factories.pool("local", backend=Backend.AGENT)
    node = factories.node(pool, "gpu-a", gpu_count=2)
    train = factories.workload(vision, "train")
    evaluation = factories.workload(nlp, "eval", gpus=0.5)
    holding_run(train, node, [0], since=start, until=start + timedelta(hours=1))
    holding_run(evaluation, node, [1], since=start, fraction=0.5)

    def busy(index: int, at: datetime) -> float:
        if index == 1:
            return 4.0
        return 90.0 if at < start + timedelta(hours=1) else 0.0

    send_samples(node, start, start + timedelta(hours=2), busy)
    return UsageStory(start, node, train, evaluation)
