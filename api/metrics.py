"""`/metrics`: the scheduler's figures in Prometheus text format.

A custom collector reads them from the database at scrape time (six queries, whatever
the cluster's size), so every process serves the same numbers: cycle durations and
decisions from CycleRecord, per-queue GPUs and workload counts from QueueState (written by
each cycle), preemptions by reason and the GPU-seconds preemptions and moves threw away
per project from SchedulingEvent, nodes by state, agent GPUs' latest samples from
GpuSample, and GPUs held against GPUs used per pool and project over the last rolled-up
minute from GpuUsageRollup (docs/usage.md; labels: pools x projects, never workloads).

It names every department and project, so only a system admin reads it (their session,
or their API token as `Authorization: Bearer fw_...`), or a scraper sending the shared
token of settings.METRICS_TOKEN (`Authorization: Bearer <token>`, Prometheus's
`authorization` / `bearer_token` option). Anyone else gets a JSON 401 (no or bad
credentials) or 403 (not a system admin), in the API's error shape.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count, FloatField, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from api.authentication import ApiTokenAuthentication
from api.exceptions import error_body
from scheduler_core import access
from scheduler_core.choices import EventType
from scheduler_core.models import CycleRecord, Node, QueueState, SchedulingEvent, Workload
from scheduler_core.selectors.agents import latest_gpu_samples
from scheduler_core.selectors.gpu_usage import latest_minute_by_project

LOST_WORK_CAUSES = {EventType.PREEMPTED: "preemption", EventType.MOVED: "move"}
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DECISION_BUCKETS = (0, 1, 5, 10, 25, 50, 100, 250, 500, 1000)
QUEUE_FIGURES = {
    "allocated_gpus": "GPUs a queue holds in a pool",
    "deserved_gpus": "GPUs a queue is guaranteed in a pool (its quota)",
    "fairshare_gpus": "GPUs a queue is entitled to in a pool this cycle (quota + over-quota)",
    "requested_gpus": "GPUs a queue holds plus what its pending workloads ask for",
}


def _bucket_label(value: float) -> str:
    return f"{value:g}"


class SchedulerCollector:
    """Reads the scheduler's figures from the database on each scrape."""

    def collect(self) -> Iterator[Metric]:
        yield from self._cycles()
        yield from self._queues()
        yield from self._preemptions()
        yield from self._lost_work()
        yield from self._workloads_and_nodes()
        yield from self._gpus()
        yield from self._held_and_used()

    def _cycles(self) -> Iterator[Metric]:
        aggregates = {
            f"d{i}": Count("pk", filter=Q(duration_seconds__lte=b))
            for i, b in enumerate(DURATION_BUCKETS)
        }
        aggregates.update(
            {
                f"n{i}": Count("pk", filter=Q(decisions__lte=b))
                for i, b in enumerate(DECISION_BUCKETS)
            }
        )
        row = CycleRecord.objects.aggregate(
            total=Count("pk"),
            seconds=Sum("duration_seconds"),
            decisions_sum=Sum("decisions"),
            dropped_sum=Sum("dropped_decisions"),
            **aggregates,
        )
        total = row["total"] or 0
        yield HistogramMetricFamily(
            "fairway_cycle_duration_seconds",
            "Duration of scheduling cycles (retained CycleRecords).",
            buckets=[(_bucket_label(b), row[f"d{i}"]) for i, b in enumerate(DURATION_BUCKETS)]
            + [("+Inf", total)],
            sum_value=row["seconds"] or 0.0,
        )
        yield HistogramMetricFamily(
            "fairway_cycle_decisions",
            "Decisions applied per scheduling cycle.",
            buckets=[(_bucket_label(b), row[f"n{i}"]) for i, b in enumerate(DECISION_BUCKETS)]
            + [("+Inf", total)],
            sum_value=row["decisions_sum"] or 0,
        )
        yield CounterMetricFamily(
            "fairway_cycle_dropped_decisions",
            "Decisions not applied because what they were computed from changed.",
            value=row["dropped_sum"] or 0,
        )

    def _queues(self) -> Iterator[Metric]:
        labels = ["queue", "level", "pool"]
        gauges = {
            name: GaugeMetricFamily(f"fairway_queue_{name}", doc, labels=labels)
            for name, doc in QUEUE_FIGURES.items()
        }
        limit = GaugeMetricFamily(
            "fairway_queue_limit_gpus", "Hard cap on a queue's GPUs in a pool.", labels=labels
        )
        workloads = GaugeMetricFamily(
            "fairway_project_workloads",
            "Pending and running workloads of a project in a pool (as of the last cycle).",
            labels=["project", "pool", "status"],
        )
        for q in QueueState.objects.select_related("pool", "department", "project"):
            # exactly one of project and department is set (a constraint of QueueState)
            owner = q.project or q.department
            assert owner is not None
            level = "project" if q.project else "department"
            values = [owner.name, level, q.pool.name]
            for name, gauge in gauges.items():
                gauge.add_metric(values, getattr(q, name))
            if q.limit_gpus is not None:
                limit.add_metric(values, q.limit_gpus)
            if q.project:
                workloads.add_metric([q.project.name, q.pool.name, "pending"], q.pending_count)
                workloads.add_metric([q.project.name, q.pool.name, "running"], q.running_count)
        yield from gauges.values()
        yield limit
        yield workloads

    def _preemptions(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "fairway_preemptions",
            "Workloads evicted, by reason (priority, reclaim, fault, fairshare, drain).",
            labels=["reason"],
        )
        loops = CounterMetricFamily(
            "fairway_preemption_loops",
            "Preemption loops detected: a workload evicted 3 times in a row, each within an "
            "hour of starting (a pool that holds loops then keeps it pending for an hour).",
        )
        looped = 0
        for type, kind, n in (  # one query for both families
            SchedulingEvent.objects.filter(
                type__in=(EventType.PREEMPTED, EventType.PREEMPTION_LOOP)
            )
            .values_list("type", "details__kind")
            .annotate(n=Count("pk"))
            .order_by()
        ):
            if type == EventType.PREEMPTION_LOOP:
                looped += n
            else:
                family.add_metric([str(kind or "unknown")], n)
        loops.add_metric([], looped)
        yield family
        yield loops

    def _lost_work(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "fairway_lost_gpu_seconds",
            "GPU-seconds of runs thrown away by preemptions and moves, by project.",
            labels=["project", "cause"],
        )
        lost = Cast(KeyTextTransform("lost_gpu_seconds", "details"), FloatField())
        for project, kind, total in (
            SchedulingEvent.objects.filter(type__in=LOST_WORK_CAUSES, project__isnull=False)
            .values_list("project__name", "type")
            .annotate(total=Sum(lost))
            .order_by()
        ):
            family.add_metric([project, LOST_WORK_CAUSES[kind]], total or 0.0)
        yield family

    def _workloads_and_nodes(self) -> Iterator[Metric]:
        by_status = GaugeMetricFamily(
            "fairway_workloads", "Workloads by status.", labels=["status"]
        )
        for status, n in Workload.objects.values_list("status").annotate(n=Count("pk")).order_by():
            by_status.add_metric([status], n)
        yield by_status
        nodes = GaugeMetricFamily(
            "fairway_nodes", "Nodes by pool and state.", labels=["pool", "state"]
        )
        gpus = GaugeMetricFamily(
            "fairway_node_gpus", "GPUs on nodes by pool and node state.", labels=["pool", "state"]
        )
        for pool, state, n, total in (
            Node.objects.values_list("pool__name", "state")
            .annotate(n=Count("pk"), gpus=Sum("gpu_count"))
            .order_by()
        ):
            nodes.add_metric([pool, state], n)
            gpus.add_metric([pool, state], total or 0)
        yield nodes
        yield gpus

    def _gpus(self) -> Iterator[Metric]:
        """Each agent GPU's latest sample (node agents report them)."""
        labels = ["node", "gpu"]
        utilization = GaugeMetricFamily(
            "fairway_gpu_utilization", "Percent of time a GPU was busy.", labels=labels
        )
        memory = GaugeMetricFamily(
            "fairway_gpu_memory_used_bytes", "GPU memory in use.", labels=labels
        )
        for samples in latest_gpu_samples().values():
            for sample in samples:
                values = [sample.node.name, str(sample.index)]
                utilization.add_metric(values, sample.utilization)
                memory.add_metric(values, sample.memory_used_mib * 1024 * 1024)
        yield utilization
        yield memory

    def _held_and_used(self) -> Iterator[Metric]:
        """GPUs held and used per pool and project in the last rolled-up minute."""
        labels = ["pool", "project"]
        held = GaugeMetricFamily(
            "fairway_gpus_held",
            "GPUs held by a project's runs in a pool, mean over the last rolled-up minute "
            "(agent pools; project empty: nobody's).",
            labels=labels,
        )
        used = GaugeMetricFamily(
            "fairway_gpus_used",
            "GPUs actually busy (utilisation x share held), same minute and labels.",
            labels=labels,
        )
        for row in latest_minute_by_project():
            values = [row.pool, row.project]
            held.add_metric(values, row.held_gpus)
            used.add_metric(values, row.used_gpus)
        yield held
        yield used


def _scrape_token_sent(request: HttpRequest) -> bool:
    """Whether the request carries settings.METRICS_TOKEN as its bearer token."""
    expected = settings.METRICS_TOKEN
    scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
    return (
        bool(expected)
        and scheme.lower() == "bearer"
        and hmac.compare_digest(sent.strip().encode(), expected.encode())
    )


def _refusal(request: HttpRequest) -> JsonResponse | None:
    """Why the request may not read the metrics (a 401 or 403), or None when it may."""
    if _scrape_token_sent(request):
        return None
    user = request.user
    if not user.is_authenticated:
        try:
            found = ApiTokenAuthentication().authenticate(Request(request))
        except AuthenticationFailed as exc:
            return _error(401, "authentication_failed", str(exc.detail))
        if found is None:
            return _error(
                401,
                "not_authenticated",
                "send a system admin's API token or the metrics scrape token "
                "(Authorization: Bearer ...), or sign in as a system admin",
            )
        user = found[0]
    if not access.is_system_admin(user):
        return _error(403, "permission_denied", "only system admins read the metrics")
    return None


def _error(status: int, code: str, detail: str) -> JsonResponse:
    response = JsonResponse(error_body(code, detail), status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def render_metrics() -> bytes:
    """The metrics page as Prometheus text."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SchedulerCollector())
    return generate_latest(registry)


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Serve the scheduler's metrics to Prometheus."""
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(render_metrics(), content_type=CONTENT_TYPE_LATEST)
