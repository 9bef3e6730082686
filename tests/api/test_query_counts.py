"""A constant number of queries per request, whatever the page size."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduler_core.choices import SimulationSource
from scheduler_core.models import Simulation, Workload
from scheduler_core.services.tokens import token_create
from tests import factories

# Queries per request as a signed-in system admin (force-authenticated: no auth queries).
# Researchers pay one more for visible_project_ids where noted.
# Lists that fit on one page need no COUNT (api.pagination); see test_a_full_page_counts.
LISTS = {
    "/api/v1/departments/": 3,
    "/api/v1/projects/": 2,
    "/api/v1/pools/": 1,
    "/api/v1/nodes/": 3,  # with the nodes' latest GPU samples
    "/api/v1/quotas/": 1,
    "/api/v1/workloads/": 2,
    "/api/v1/queues/": 4,
    "/api/v1/events/": 1,
    "/api/v1/tokens/": 1,
    "/api/v1/simulations/": 1,
    "/api/v1/overview/": 8,
}


def _grow(cluster, n: int, tag: str) -> None:
    """Add n of everything the lists show (tag keeps names unique across calls)."""
    from scheduler_core.services.workloads import WorkloadRequest, workload_submit

    admin = cluster["admin"]
    for i in range(n):
        dept = factories.department(f"d-{tag}-{i}")
        project = factories.project(dept, f"p-{tag}-{i}")
        factories.researcher(project, f"r-{tag}-{i}")
        factories.researcher(cluster["vision"], f"v-{tag}-{i}")
        pool = factories.pool(f"pool-{tag}-{i}")
        node = factories.node(pool, f"n-{tag}-{i}")
        factories.quota(project, pool, gpus=1)
        factories.running_workload(cluster["vision"], [node], gpus=1, name=f"run-{tag}-{i}")
        workload_submit(
            user=admin,
            request=WorkloadRequest(project=cluster["vision"], name=f"wait-{tag}-{i}", gpus=1),
        )
        token_create(user=admin, name=f"t-{tag}-{i}")
        Simulation.objects.create(
            name=f"s-{tag}-{i}", source=SimulationSource.LIVE, created_by=admin, result={"x": i}
        )


def _count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return len(ctx.captured_queries)


@pytest.mark.parametrize("url", list(LISTS))
def test_list_queries_do_not_grow_with_the_page(url, cluster, admin_api):
    _grow(cluster, 1, "a")
    small = _count(admin_api, url)
    _grow(cluster, 6, "b")
    assert (small, _count(admin_api, url)) == (LISTS[url], LISTS[url])


def test_a_full_page_counts_the_whole_list_and_the_last_page_does_not(cluster, admin_api):
    """`count` is the whole list's on every page: read with a COUNT where the page is
    full (more may follow), from the page itself on the last one."""
    for i in range(5):
        factories.running_workload(cluster["vision"], cluster["nodes"], gpus=1, name=f"w-{i}")
    url = "/api/v1/workloads/?ordering=name&limit=2"
    full = _count(admin_api, url)
    assert _count(admin_api, f"{url}&offset=4") == full - 1  # the last page: one row
    pages = [admin_api.get(f"{url}&offset={offset}").json() for offset in (0, 2, 4, 5, 9)]
    assert [p["count"] for p in pages] == [5, 5, 5, 5, 5]
    assert [[r["name"] for r in p["results"]] for p in pages] == [
        ["w-0", "w-1"], ["w-2", "w-3"], ["w-4"], [], [],
    ]  # fmt: skip
    assert [p["next"] is None for p in pages] == [False, False, True, True, True]
    Workload.objects.all().delete()
    assert admin_api.get(url).json() == {
        "count": 0, "next": None, "previous": None, "results": [],
    }  # fmt: skip


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/workloads/{wl}/",
        "/api/v1/workloads/{wl}/events/",
        "/api/v1/nodes/gpu-1/",
        "/api/v1/projects/vision/",
        "/api/v1/queues/a100/",
    ],
)
def test_detail_queries_are_constant(url, cluster, admin_api):
    running = factories.running_workload(cluster["vision"], cluster["nodes"], gpus=1, name="r")
    path = url.format(wl=running.pk)
    small = _count(admin_api, path)
    for i in range(5):
        factories.running_workload(cluster["vision"], cluster["nodes"], gpus=1, name=f"more-{i}")
        factories.researcher(cluster["vision"], f"member-{i}")
    assert _count(admin_api, path) == small


def test_researcher_lists_are_constant_too(cluster, client_as):
    client = client_as("researcher")
    _grow(cluster, 1, "a")
    before = {url: _count(client, url) for url in LISTS}
    _grow(cluster, 5, "b")
    assert {url: _count(client, url) for url in LISTS} == before
