"""The workloads list's rows, built from plain column values instead of model instances.

`GET /api/v1/workloads/` is what every `fairway top` and console script polls. Through
model instances, prefetches and WorkloadSerializer a page cost about 10 ms of ORM work
for three queries that the database answers in well under one; here the same page is
one `values()` query, one statement for the pods' nodes and the candidate pools, and one
dict per row. The output is WorkloadSerializer's, which stays the list's documented
schema: a test compares the two on every kind of workload.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connection
from rest_framework import serializers

from api.serializers.workloads import WorkloadSerializer
from scheduler_core.db.lookups import any_of_sql
from scheduler_core.models import Allocation, Node, NodePool, WorkloadCandidatePool
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
    their nodes and candidate pools read in one query."""
    nodes: dict[int, list[str]] = defaultdict(list)
    pools: dict[int, list[str]] = defaultdict(list)
    for workload_id, is_pool, name in _nodes_and_pools([row["id"] for row in page]):
        (pools if is_pool else nodes)[workload_id].append(name)
    return [_row(row, pools[row["id"]], nodes[row["id"]]) for row in page]


def _nodes_and_pools(ids: list[int]) -> list[tuple[int, int, str]]:
    """(workload id, 0, node name) for each pod of those workloads, and (workload id, 1,
    pool name) for each of their candidate pools in order of preference: one statement
    written here, since Django's compiling of the two querysets it replaces cost a fifth
    of a list request's CPU (on PostgreSQL the ids are one array: the statement is the
    same for every page, prepared after a few runs)."""
    if not ids:
        return []
    quote = connection.ops.quote_name
    allocation, node = Allocation._meta, Node._meta
    choice, pool = WorkloadCandidatePool._meta, NodePool._meta
    placed, placed_ids = any_of_sql("a.workload_id", ids, connection.vendor)
    wanted, wanted_ids = any_of_sql("c.workload_id", ids, connection.vendor)
    sql = (
        f"SELECT a.workload_id, 0, n.name, 0, a.id FROM {quote(allocation.db_table)} a "
        f"JOIN {quote(node.db_table)} n ON n.id = a.node_id WHERE {placed} "
        "UNION ALL "
        f"SELECT c.workload_id, 1, p.name, c.preference, c.id FROM {quote(choice.db_table)} c "
        f"JOIN {quote(pool.db_table)} p ON p.id = c.pool_id WHERE {wanted} "
        "ORDER BY 2, 4, 5"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*placed_ids, *wanted_ids])
        return [(row[0], row[1], row[2]) for row in cursor.fetchall()]


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
