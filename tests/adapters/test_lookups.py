"""`__any_of` (scheduler_core.db.lookups) finds exactly the rows `__in` finds, on SQLite
and on PostgreSQL (where the keys go as one array)."""

from __future__ import annotations

import pytest

from scheduler_core.models import Allocation, Node, Workload
from tests import factories as f

pytestmark = pytest.mark.django_db


def _workloads(count: int) -> list[Workload]:
    project = f.project()
    return [f.workload(project, name=f"w{i}") for i in range(count)]


def test_any_of_finds_the_rows_in_finds_duplicates_missing_keys_and_none_included():
    ws = _workloads(4)
    keys = [ws[2].pk, ws[0].pk, ws[2].pk, None, 10**9]

    found = set(Workload.objects.filter(pk__any_of=keys).values_list("pk", flat=True))

    assert found == set(Workload.objects.filter(pk__in=keys).values_list("pk", flat=True))
    assert found == {ws[0].pk, ws[2].pk}


def test_any_of_takes_any_iterable_and_a_foreign_keys_ids():
    pool = f.pool()
    nodes = [f.node(pool, gpu_count=8) for _ in range(2)]
    running = f.running_workload(f.project(), nodes)
    f.workload(running.project, name="waiting")

    by_generator = Workload.objects.filter(pk__any_of=(w.pk for w in [running]))
    by_id = Allocation.objects.filter(workload_id__any_of={running.pk})
    by_relation = Allocation.objects.filter(node__any_of=[nodes[1].pk])

    assert list(by_generator) == [running]
    assert by_id.count() == running.allocations.count() == 2
    assert list(by_relation.values_list("node_id", flat=True)) == [nodes[1].pk]


def test_any_of_an_empty_list_matches_nothing_and_excludes_nothing():
    ws = _workloads(2)

    assert list(Workload.objects.filter(pk__any_of=[])) == []
    assert Workload.objects.exclude(pk__any_of=[]).count() == len(ws)
    assert Workload.objects.exclude(pk__any_of=[ws[0].pk]).get() == ws[1]


def test_any_of_refuses_a_single_value():
    with pytest.raises(TypeError, match="list of values"):
        list(Node.objects.filter(name__any_of="node-1"))
