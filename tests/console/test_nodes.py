"""The GPU map and node actions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.models import Allocation
from tests import factories


def test_gpu_map_colours_devices_by_project_and_shows_fractions(client_for, cluster):
    gpu1 = cluster["nodes"][0]
    notebook = factories.workload(
        cluster["vision"], "notebook", gpus=0.5, status=WorkloadStatus.RUNNING
    )
    Allocation.objects.create(
        workload=notebook, pod_index=0, node=gpu1, gpu_devices=[3], gpu_fraction=0.5
    )
    factories.running_workload(cluster["infra"], [gpu1], name="infra-serve", gpus=2)
    html = client_for("researcher").get(reverse("console:nodes")).content.decode()
    assert 'title="GPU 3: vision/notebook 0.5"' in html
    # alice may not see infra: the devices are shown as taken, without names
    assert "infra-serve" not in html
    assert 'title="GPU 0: another project 1"' in html
    assert "2.5 used" in html


@pytest.mark.parametrize(
    ("action", "state"),
    [("cordon", NodeState.CORDONED), ("drain", NodeState.CORDONED)],
)
def test_system_admin_cordons_and_drains(client_for, cluster, action, state):
    node = cluster["nodes"][0]
    workload = factories.running_workload(cluster["vision"], [node])
    response = client_for("admin").post(reverse("console:node_action", args=[node.pk, action]))
    assert response.status_code == 302
    node.refresh_from_db()
    workload.refresh_from_db()
    assert node.state == state
    expected = WorkloadStatus.PENDING if action == "drain" else WorkloadStatus.RUNNING
    assert workload.status == expected


def test_uncordon(client_for, cluster):
    node = cluster["nodes"][0]
    node.state = NodeState.CORDONED
    node.save()
    client_for("admin").post(reverse("console:node_action", args=[node.pk, "uncordon"]))
    node.refresh_from_db()
    assert node.state == NodeState.READY


@pytest.mark.parametrize("role", ["dept_admin", "researcher", "viewer"])
def test_only_system_admins_act_on_nodes(client_for, cluster, role):
    node = cluster["nodes"][0]
    url = reverse("console:node_action", args=[node.pk, "drain"])
    assert client_for(role).post(url).status_code == 403
    node.refresh_from_db()
    assert node.state == NodeState.READY
