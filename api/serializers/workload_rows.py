"""The workloads list's rows, built from plain column values instead of model instances.

`GET /api/v1/workloads/` is what every `fairway top` and console script polls. Through
model instances, prefetches and WorkloadSerializer a page cost about 10 ms of ORM work
for three queries that the database answers in well under one; here the same page is
three `values()` queries and one dict per row. The output is WorkloadSerializer's, which
stays the list's documented schema: a test compares the two on every kind of workload.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rest_framework import serializers

from api.serializers.workloads import WorkloadSerializer
from scheduler_core.models import Allocation, WorkloadCandidatePool
from scheduler_core.models.workloads import total_gpus_of

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


_COLUMNS = {
    "project": "project__name",
    "department": "project__department__name",
    "submitted_by": "submitted_by__username",
}
"""Keys whose column has another name (the others are read from the column of their name)."""

_CONVERT: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(("gpus", "cpu", "memory", "weight", "progress_seconds"), float),
    **dict.fromkeys(("submitted_at", "started_at", "finished_at"), _time),
    "groups": lambda groups: [_group(g) for g in groups or ()],
    "node_selector": lambda labels: {str(k): str(v) for k, v in (labels or {}).items()},
    "spec": lambda spec: {str(k): v for k, v in (spec or {}).items()},
}
"""How a column's value is written, where WorkloadSerializer's field changes it."""

_DERIVED = ("total_gpus", "pools", "running_pods", "nodes")
"""Keys that are not columns (see _row)."""

KEYS = tuple(WorkloadSerializer().fields)
"""The keys of a row, in the serializer's order."""

ROW_FIELDS = tuple(_COLUMNS.get(key, key) for key in KEYS if key not in _DERIVED)
"""The columns a row is built from (`QuerySet.values(*ROW_FIELDS)`)."""


def _row(row: Mapping[str, Any], pools: list[str], nodes: list[str]) -> dict[str, Any]:
    derived = {
        "total_gpus": float(total_gpus_of(row["groups"], row["pods"], row["gpus"])),
        "pools": pools,
        "running_pods": len(nodes),
        "nodes": sorted(set(nodes)),
    }
    out = {}
    for key in KEYS:
        if key in derived:
            out[key] = derived[key]
            continue
        value = row[_COLUMNS.get(key, key)]
        convert = _CONVERT.get(key)
        out[key] = value if convert is None else convert(value)
    return out
