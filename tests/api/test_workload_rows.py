"""The workloads list is built from column values (api.serializers.workload_rows); what a
client reads is exactly what WorkloadSerializer, the documented schema, writes."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from api.serializers.workload_rows import ROW_FIELDS, workload_rows
from api.serializers.workloads import WorkloadSerializer
from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Workload, WorkloadCandidatePool
from scheduler_core.selectors.workloads import workload_list, workloads_with_placements
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def every_kind(cluster):
    """Pending with candidate pools and a selector, a multi-group gang, a running gang on
    two nodes, a finished one, one nobody submitted, fractional GPUs."""
    other = factories.pool("h100")
    pending = factories.workload(
        cluster["vision"], "pending", node_selector={"zone": "a"}, spec={"duration": 30},
        submitted_by=cluster["researcher"], queue_position=2, pending_reason="waits",
    )  # fmt: skip
    for preference, pool in enumerate((other, cluster["pool"])):
        WorkloadCandidatePool.objects.create(workload=pending, pool=pool, preference=preference)
    factories.workload(
        cluster["vision"], "gang", gpus=0, pods=3, min_pods=2,
        groups=[
            {"name": "ps", "pods": 1, "min_pods": 1, "gpus": 0, "cpu": 4, "memory": 8},
            {"name": "worker", "pods": 2, "min_pods": 1, "gpus": 2, "cpu": 8, "memory": 32},
        ],
    )  # fmt: skip
    factories.running_workload(
        cluster["vision"], cluster["nodes"], name="running", gpus=2, weight=2.5
    )
    factories.workload(
        cluster["vision"], "done", status=WorkloadStatus.COMPLETED, gpus=0.5,
        started_at=timezone.now() - timedelta(hours=1), finished_at=timezone.now(),
        progress_seconds=3600, restarts=1, preemptions=2, backoff_limit=4,
    )  # fmt: skip
    return Workload.objects.count()


def _plain(data) -> list[dict]:
    return json.loads(json.dumps(data))


def test_rows_are_what_the_serializer_writes_for_every_kind_of_workload(cluster, every_kind):
    workloads = workload_list(user=cluster["admin"])
    expected = _plain(WorkloadSerializer(workloads_with_placements(workloads), many=True).data)
    rows = _plain(workload_rows(list(workloads.values(*ROW_FIELDS))))
    assert len(rows) == every_kind
    for got, want in zip(rows, expected, strict=True):
        assert got == want
        assert list(got) == list(want)  # the same keys in the same order


def test_the_list_answers_the_rows_paginated_and_filtered(cluster, every_kind, client_as):
    body = client_as("researcher").get("/api/v1/workloads/?status=pending&limit=1").json()
    assert body["count"] == 2 and len(body["results"]) == 1
    (row,) = body["results"]
    one = Workload.objects.filter(pk=row["id"])
    assert row == _plain(WorkloadSerializer(workloads_with_placements(one), many=True).data)[0]
    ordered = client_as("researcher").get("/api/v1/workloads/?ordering=name").json()
    assert [r["name"] for r in ordered["results"]] == ["done", "gang", "pending", "running"]
