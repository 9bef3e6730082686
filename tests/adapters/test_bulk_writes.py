"""The hot path's set-based writes do what Django's own would (scheduler_core.db.bulk_writes)."""

from __future__ import annotations

import pytest

from scheduler_core.db.bulk_writes import delete_rows
from scheduler_core.models import Allocation, NodePool, PodRun
from tests import factories as f

pytestmark = pytest.mark.django_db


def test_delete_rows_deletes_and_clears_the_runs_that_served_them():
    pool = f.pool()
    nodes = [f.node(pool, gpu_count=8) for _ in range(2)]
    w = f.running_workload(f.project(), nodes)
    first, second = w.allocations.order_by("pk")
    run = PodRun.objects.create(workload=w, node=nodes[0], pod_index=0, epoch=1, allocation=first)

    delete_rows(Allocation, [first.pk])

    assert list(w.allocations.values_list("pk", flat=True)) == [second.pk]
    run.refresh_from_db()
    assert run.allocation_id is None  # what on_delete=SET_NULL asks: the run is kept


def test_delete_rows_refuses_a_model_with_a_relation_it_cannot_honour():
    with pytest.raises(ValueError, match="cannot honour"):
        delete_rows(NodePool, [1])  # nodes CASCADE from their pool
