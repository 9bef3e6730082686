"""The workloads list's rows, built from plain column values instead of model instances.

`GET /api/v1/workloads/` is what every `fairway top` and console script polls. Through
model instances, prefetches and WorkloadSerializer a page cost about 10 ms of ORM work
for three queries that the database answers in well under one; here the same page is
three `values()` queries and one dict per row. The output is WorkloadSerializer's, which
stays the list's documented schema: a test compares the two on every kind of workload.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rest_framework import serializers

from scheduler_core.models import Allocation, WorkloadCandidatePool
from scheduler_core.models.workloads import total_gpus_of

ROW_FIELDS = (
    "id", "name", "project__name", "project_id", "project__department__name", "kind",
    "priority", "preemptible", "pods", "min_pods", "gpus", "cpu", "memory", "groups",
    "node_selector", "weight", "backoff_limit", "restarts", "preemptions", "spec", "status",
    "pending_reason", "queue_position", "submitted_by__username", "submitted_at",
    "started_at", "finished_at", "progress_seconds", "version",
)  # fmt: skip
"""The columns a row is built from (`QuerySet.values(*ROW_FIELDS)`)."""

_TIME = serializers.DateTimeField()  # DRF's own format: ISO 8601, in the current zone


def _time(value: Any) -> str | None:
    return None if value is None else _TIME.to_representation(value)


def _group(group: Mapping[str, Any]) -> dict[str, Any]:
    """A stored pod group as PodGroupSerializer writes it."""
    return {
        "name": str(group["name"]),
        "pods": int(group["pods"]),
        "min_pods": int(group["min_pods"]),
        "gpus": float(group["gpus"]),
        "cpu": float(group["cpu"]),
        "memory": float(group["memory"]),
    }


def workload_rows(page: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of `page` (dicts of ROW_FIELDS) as WorkloadSerializer writes them, with
    their candidate pools and nodes read in two queries."""
    ids = [row["id"] for row in page]
    nodes: dict[int, list[str]] = defaultdict(list)
    for workload_id, node in Allocation.objects.filter(workload_id__in=ids).values_list(
        "workload_id", "node__name"
    ):
        nodes[workload_id].append(node)
    pools: dict[int, list[str]] = defaultdict(list)
    for workload_id, pool in (
        WorkloadCandidatePool.objects.filter(workload_id__in=ids)
        .order_by("preference", "pk")
        .values_list("workload_id", "pool__name")
    ):
        pools[workload_id].append(pool)
    return [_row(row, pools[row["id"]], nodes[row["id"]]) for row in page]


def _row(row: Mapping[str, Any], pools: list[str], nodes: list[str]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "project": row["project__name"],
        "project_id": row["project_id"],
        "department": row["project__department__name"],
        "kind": row["kind"],
        "priority": row["priority"],
        "preemptible": row["preemptible"],
        "pods": row["pods"],
        "min_pods": row["min_pods"],
        "gpus": float(row["gpus"]),
        "cpu": float(row["cpu"]),
        "memory": float(row["memory"]),
        "groups": [_group(g) for g in row["groups"] or ()],
        "total_gpus": float(total_gpus_of(row["groups"], row["pods"], row["gpus"])),
        "pools": pools,
        "node_selector": {str(k): str(v) for k, v in (row["node_selector"] or {}).items()},
        "weight": float(row["weight"]),
        "backoff_limit": row["backoff_limit"],
        "restarts": row["restarts"],
        "preemptions": row["preemptions"],
        "spec": {str(k): v for k, v in (row["spec"] or {}).items()},
        "status": row["status"],
        "pending_reason": row["pending_reason"],
        "queue_position": row["queue_position"],
        "submitted_by": row["submitted_by__username"],
        "submitted_at": _time(row["submitted_at"]),
        "started_at": _time(row["started_at"]),
        "finished_at": _time(row["finished_at"]),
        "progress_seconds": float(row["progress_seconds"]),
        "version": row["version"],
        "running_pods": len(nodes),
        "nodes": sorted(set(nodes)),
    }
