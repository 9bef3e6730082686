"""The Django admin lists and edits every model for superusers, and only for them."""

import pytest
from django.contrib import admin
from django.urls import reverse

from scheduler_core import models
from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.models import SchedulingEvent
from tests import factories

pytestmark = pytest.mark.django_db

MODELS = [getattr(models, name) for name in models.__all__]


def test_every_model_is_registered():
    missing = [m.__name__ for m in MODELS if m not in admin.site._registry]
    assert missing == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelist_and_add_pages_load(client, cluster, model):
    client.force_login(cluster["admin"])
    opts = model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    response = client.get(url, {"q": "a"})
    assert response.status_code == 200


def test_non_superuser_cannot_use_admin(client, cluster):
    client.force_login(cluster["dept_admin"])
    response = client.get(reverse("admin:scheduler_core_workload_changelist"))
    assert response.status_code == 302  # to the admin login


def test_a_workloads_scheduling_fields_are_read_only_in_the_admin(client, cluster):
    job = factories.workload(cluster["vision"], "job", priority=10)
    client.force_login(cluster["admin"])
    page = client.get(reverse("admin:scheduler_core_workload_change", args=[job.pk]))
    assert page.status_code == 200
    assert b'name="priority"' not in page.content and b'name="status"' not in page.content


def test_admin_actions_act_on_workloads_through_the_services(client, cluster):
    job = factories.workload(cluster["vision"], "job")
    client.force_login(cluster["admin"])
    response = client.post(
        reverse("admin:scheduler_core_workload_changelist"),
        {"action": "workload_cancel_action", "_selected_action": [job.pk]},
        follow=True,
    )
    assert b"Cancel selected workloads: 1 done." in response.content
    job.refresh_from_db()
    assert job.status == WorkloadStatus.CANCELLED and job.version == 1
    event = SchedulingEvent.objects.get(workload=job, type=EventType.DELETED)
    assert event.reason == "cancelled by admin"


def test_editing_a_node_in_the_admin_raises_its_version_and_asks_for_a_cycle(
    client, cluster, django_capture_on_commit_callbacks
):
    node = cluster["nodes"][0]
    client.force_login(cluster["admin"])
    url = reverse("admin:scheduler_core_node_change", args=[node.pk])
    form = {
        "pool": node.pool_id, "name": node.name, "gpu_count": 4, "gpu_model": node.gpu_model,
        "cpu": node.cpu, "memory": node.memory, "labels": "{}",
    }  # fmt: skip
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    node.refresh_from_db()
    assert (node.gpu_count, node.version) == (4, 1)
    assert any("_requested" in repr(c) for c in callbacks)


def test_a_heartbeat_does_not_raise_a_nodes_version(cluster):
    node = cluster["nodes"][0]
    node.last_heartbeat = node.created_at
    node.save(update_fields=["last_heartbeat"])
    node.refresh_from_db()
    assert node.version == 0
