"""The hot path's set-based writes do what Django's own would (scheduler_core.db.bulk_writes)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from scheduler_core.db.bulk_writes import copy_unsaved, delete_rows, insert_objects, insert_rows
from scheduler_core.models import Allocation, NodePool, PodRun, SchedulingEvent, Workload
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


@pytest.mark.parametrize("count", [1, 3])
def test_insert_rows_writes_each_rows_own_values_whether_its_column_varies_or_not(count):
    """A column whose values are all the same goes as one value: every row still gets
    it, the others their own, and the keys come back in the rows' order."""
    project = f.project()
    at = timezone.now()
    rows = [
        (at, "submitted", project.pk, None, f"reason {i}", {"i": i} if i % 2 else {})
        for i in range(count)
    ]
    fields = ("created_at", "type", "project", "node", "reason", "details")

    pks = insert_rows(SchedulingEvent, fields, rows)

    stored = {e.pk: e for e in SchedulingEvent.objects.filter(pk__in=pks)}
    assert [
        (e.created_at, e.type, e.project_id, e.node_id, e.reason, e.details)
        for e in (stored[pk] for pk in pks)
    ] == rows


def test_copies_of_an_unsaved_instance_are_instances_of_their_own():
    project = f.project()
    template = Workload(
        project=project, name="template", gpus=2, spec={"duration": 5}, submitted_at=timezone.now()
    )
    copies = [copy_unsaved(template, name=f"w{i}", spec={"duration": i}) for i in range(2)]

    insert_objects(copies)

    assert template.pk is None and template.name == "template"
    stored = Workload.objects.filter(pk__in=[c.pk for c in copies]).order_by("name")
    assert [(w.name, w.gpus, w.spec, w.project) for w in stored] == [
        ("w0", 2, {"duration": 0}, project),
        ("w1", 2, {"duration": 1}, project),
    ]
    assert not any(c._state.adding for c in copies)
