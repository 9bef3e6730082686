"""Cluster totals per pool, as the overview page and GET /api/v1/overview/ show them."""

import pytest

from scheduler_core.models import WorkloadCandidatePool
from scheduler_core.selectors import pool_summaries
from tests import factories

pytestmark = pytest.mark.django_db


def test_pending_workloads_count_in_each_pool_they_may_run_in(cluster):
    t4 = factories.pool("t4")
    factories.node(t4, "t4-1", gpu_count=4)
    anywhere = factories.workload(cluster["vision"], "anywhere")
    only_t4 = factories.workload(cluster["vision"], "only-t4")
    WorkloadCandidatePool.objects.create(workload=only_t4, pool=t4)
    factories.running_workload(cluster["vision"], cluster["nodes"][:1])
    by_name = {p.name: p for p in pool_summaries()}
    assert (by_name["a100"].pending, by_name["t4"].pending) == (1, 2)
    assert (by_name["a100"].running, by_name["a100"].gpus_allocated) == (1, 1)
    assert anywhere.status == "pending"
