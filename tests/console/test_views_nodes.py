"""Nodes list: filters by pool and state, GPUs held of total, CPU and memory, the workload
on each GPU in words, and cordon / drain / uncordon answering the row in place."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from scheduler_core.choices import NodeState, WorkloadStatus
from tests import factories


def _row(html: str, name: str) -> str:
    return html.split(f'data-node="{name}"', 1)[1].split("</tr>", 1)[0]


def _get(client, query: str = "") -> str:
    return client.get(reverse("console:node_list") + query).content.decode()


def test_rows_show_utilisation_cpu_memory_and_each_gpus_workload(client_for, cluster):
    gpu1 = cluster["nodes"][0]
    gpu1.cpu, gpu1.memory = 64, 512
    gpu1.save()
    factories.running_workload(cluster["vision"], [gpu1], name="resnet", gpus=2, cpu=8, memory=32)
    html = _get(client_for("researcher"))
    row = _row(html, "gpu-1")
    assert "2 / 8 GPUs" in row
    assert "8 / 64" in row and "32 / 512 GiB" in row
    assert "GPU 0:</span> <a" in row and "vision/resnet" in row
    assert 'GPU 7:</span> <span class="muted">free</span>' in row


def test_other_projects_workloads_stay_nameless(client_for, cluster):
    factories.running_workload(cluster["infra"], cluster["nodes"][:1], name="secret-job")
    html = _get(client_for("researcher"))
    assert "secret-job" not in html
    assert "another project" in _row(html, "gpu-1")


def test_filters_by_pool_and_state(client_for, cluster):
    other = factories.pool("h100")
    factories.node(other, "h-1")
    node = cluster["nodes"][1]
    node.state = NodeState.CORDONED
    node.save()
    client = client_for("admin")
    assert 'data-node="h-1"' not in _get(client, f"?pool={cluster['pool'].pk}")
    html = _get(client, "?state=cordoned")
    assert 'data-node="gpu-2"' in html and 'data-node="gpu-1"' not in html


def test_cordon_answers_the_row_and_drain_asks_first(client_for, cluster):
    client = client_for("admin")
    node = cluster["nodes"][0]
    w = factories.running_workload(cluster["vision"], [node], name="resnet")
    url = reverse("console:node_list_action", args=[node.pk, "cordon"])
    response = client.post(url, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith("<tr") and 'data-state="cordoned"' in html
    assert "gpu-1 is cordoned" in html
    assert 'hx-confirm="Drain gpu-1 (already cordoned)?' in html
    client.post(reverse("console:node_list_action", args=[node.pk, "drain"]))
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING
    html = client.post(reverse("console:node_list_action", args=[node.pk, "uncordon"])).content
    assert b'data-state="ready"' in html


@pytest.mark.parametrize("role", ["researcher", "dept_admin", "viewer"])
def test_only_system_admins_act(client_for, cluster, role):
    node = cluster["nodes"][0]
    assert "hx-post" not in _get(client_for(role))
    response = client_for(role).post(reverse("console:node_list_action", args=[node.pk, "cordon"]))
    assert response.status_code == 403
    node.refresh_from_db()
    assert node.state == NodeState.READY


def test_node_list_queries_do_not_grow_with_nodes(client_for, cluster):
    client = client_for("admin")

    def count() -> int:
        _get(client)
        with CaptureQueriesContext(connection) as queries:
            _get(client)
        return len(queries)

    few = count()
    for i in range(10):
        node = factories.node(cluster["pool"], f"more-{i}")
        factories.running_workload(cluster["vision"], [node], name=f"w{i}")
    assert count() == few
