"""Queues ("why is my job pending"), events, overview, nodes and filters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from api.serializers.cluster import MAX_NODE_PODS
from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.live_events.recording import event_record
from scheduler_core.models import QueueState
from tests import factories


@pytest.fixture
def queued(cluster):
    """Queue states as a cycle would write them, and pending workloads with reasons."""
    pool = cluster["pool"]
    QueueState.objects.create(
        pool=pool,
        department=cluster["dept"],
        deserved_gpus=12,
        fairshare_gpus=12,
        allocated_gpus=8,
        requested_gpus=20,
    )
    QueueState.objects.create(pool=pool, department=cluster["other_dept"], deserved_gpus=4)
    QueueState.objects.create(
        pool=pool,
        project=cluster["vision"],
        deserved_gpus=8,
        limit_gpus=10,
        fairshare_gpus=9,
        allocated_gpus=8,
        requested_gpus=16,
        pending_count=2,
        running_count=1,
    )
    QueueState.objects.create(pool=pool, project=cluster["infra"], deserved_gpus=4)
    now = timezone.now()
    for i, name in enumerate(["second", "first"]):
        factories.workload(
            cluster["vision"],
            name,
            gpus=4,
            queue_position=2 - i,
            pending_reason=f"waiting: vision is at its fair share ({name})",
            submitted_at=now - timedelta(seconds=i),
        )
    factories.workload(cluster["infra"], "ops-job", queue_position=1, pending_reason="quota")


def test_queue_view_explains_why_work_waits(queued, client_as):
    body = client_as("researcher").get("/api/v1/queues/a100/").json()
    assert [d["name"] for d in body["departments"]] == ["research"]
    (vision,) = body["projects"]
    assert (vision["deserved_gpus"], vision["limit_gpus"], vision["fairshare_gpus"]) == (8, 10, 9)
    assert vision["pending_demand_gpus"] == 8
    assert [w["name"] for w in body["pending"]] == ["first", "second"]
    assert body["pending"][0]["queue_position"] == 1
    assert "fair share" in body["pending"][0]["pending_reason"]
    assert body["pending_total"] == 2  # infra's job is not alice's business


def test_admin_sees_every_queue_and_can_narrow_to_a_project(queued, admin_api):
    body = admin_api.get("/api/v1/queues/").json()["results"][0]
    assert {p["name"] for p in body["projects"]} == {"vision", "infra"}
    assert body["pending_total"] == 3
    narrowed = admin_api.get("/api/v1/queues/a100/?project=infra&pending_limit=0").json()
    assert [p["name"] for p in narrowed["projects"]] == ["infra"]
    assert narrowed["pending"] == [] and narrowed["pending_total"] == 1


def test_events_filter_and_page_by_cursor(cluster, admin_api):
    base = timezone.now() - timedelta(hours=1)
    for i in range(5):
        w = factories.workload(cluster["vision"], f"w-{i}")
        event_record(type=EventType.SUBMITTED, workload=w, at=base + timedelta(minutes=i))
    event_record(type=EventType.NODE_STATE, node=cluster["nodes"][0], at=base)
    first = admin_api.get("/api/v1/events/?type=submitted&limit=2").json()
    assert [e["workload"] for e in first["results"]] == ["w-4", "w-3"]
    second = admin_api.get(first["next"]).json()
    assert [e["workload"] for e in second["results"]] == ["w-2", "w-1"]
    since = (base + timedelta(minutes=3)).isoformat().replace("+00:00", "Z")
    recent = admin_api.get("/api/v1/events/", {"since": since}).json()["results"]
    assert [e["workload"] for e in recent] == ["w-4", "w-3"]
    node_events = admin_api.get("/api/v1/events/?node=gpu-1").json()["results"]
    assert [e["type"] for e in node_events] == ["node_state"]
    by_project = admin_api.get("/api/v1/events/?project=vision&type=node_state").json()
    assert by_project["results"] == []


def test_events_of_other_projects_are_hidden(cluster, client_as):
    event_record(type=EventType.SUBMITTED, workload=factories.workload(cluster["infra"], "x"))
    event_record(type=EventType.SUBMITTED, workload=factories.workload(cluster["vision"], "y"))
    names = [
        e["workload"] for e in client_as("researcher").get("/api/v1/events/").json()["results"]
    ]
    assert names == ["y"]


def test_overview_has_totals_per_pool(cluster, client_as):
    factories.running_workload(cluster["vision"], cluster["nodes"], gpus=2)
    body = client_as("viewer").get("/api/v1/overview/").json()
    assert (body["gpus_total"], body["gpus_allocated"], body["running"]) == (16, 4.0, 1)
    (pool,) = body["pools"]
    assert (pool["name"], pool["gpus_free"], pool["utilisation"]) == ("a100", 12.0, 0.25)


def test_nodes_show_pods_only_of_visible_projects(cluster, client_as):
    factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=2, name="mine")
    factories.running_workload(cluster["infra"], [cluster["nodes"][0]], gpus=1, name="theirs")
    node = client_as("researcher").get("/api/v1/nodes/gpu-1/").json()
    assert node["gpus_in_use"] == 3
    assert [p["workload"] for p in node["pods"]] == ["mine"]
    admin_view = client_as("system_admin").get("/api/v1/nodes/gpu-1/").json()
    assert {p["workload"] for p in admin_view["pods"]} == {"mine", "theirs"}


def test_a_node_shows_its_first_pods_and_links_to_all_of_its_workloads(cluster, client_as):
    """A node full of tiny pods does not make every node page huge: it shows the first
    MAX_NODE_PODS, how many there are, and where to page through their workloads."""
    gpu1 = cluster["nodes"][0]
    factories.running_workload(cluster["vision"], [gpu1] * 150, cpu=1, name="many")
    factories.running_workload(cluster["nlp"], [gpu1], cpu=1, name="one")
    factories.running_workload(cluster["vision"], [cluster["nodes"][1]], cpu=1, name="elsewhere")
    api = client_as("researcher")
    node = api.get("/api/v1/nodes/gpu-1/").json()
    assert (len(node["pods"]), node["pod_count"]) == (MAX_NODE_PODS, 150)
    assert node["workloads_url"] == "/api/v1/workloads/?node=gpu-1"
    listed = api.get(node["workloads_url"]).json()["results"]
    assert [w["name"] for w in listed] == ["many"]
    everyone = client_as("system_admin").get(node["workloads_url"]).json()["results"]
    assert {w["name"] for w in everyone} == {"many", "one"}


def test_drain_requeues_and_cordon_is_visible(cluster, admin_api):
    w = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=1)
    drained = admin_api.post("/api/v1/nodes/gpu-1/drain/").json()
    assert drained["state"] == "cordoned" and drained["pods"] == []
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING
    assert admin_api.post("/api/v1/nodes/gpu-1/uncordon/").json()["state"] == "ready"
    assert admin_api.get("/api/v1/nodes/?state=ready").json()["count"] == 2


def test_node_with_pods_cannot_be_deleted(cluster, admin_api):
    factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=1)
    response = admin_api.delete("/api/v1/nodes/gpu-1/")
    assert response.status_code == 409
    assert "drain it first" in response.json()["detail"]


def test_workload_filters_and_ordering(cluster, admin_api):
    factories.workload(cluster["vision"], "low", priority=10)
    factories.workload(cluster["vision"], "high", priority=90)
    factories.workload(cluster["infra"], "ops", priority=50, status=WorkloadStatus.SUSPENDED)

    def names(q):
        return [w["name"] for w in admin_api.get(f"/api/v1/workloads/?{q}").json()["results"]]

    assert names("ordering=-priority") == ["high", "ops", "low"]
    assert names("project=vision&ordering=priority") == ["low", "high"]
    assert names("status=suspended") == ["ops"]
    assert names("status=pending&status=suspended&ordering=name") == ["high", "low", "ops"]
    assert names("department=ops") == ["ops"]
    page = admin_api.get("/api/v1/workloads/?limit=1&offset=1&ordering=name").json()
    assert page["count"] == 3 and [w["name"] for w in page["results"]] == ["low"]
