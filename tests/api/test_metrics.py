"""/metrics: Prometheus text read from the database in constant queries."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler_core.loop.cycle import run_cycle
from scheduler_core.services.quotas import queue_owner_set_quota

pytestmark = pytest.mark.django_db


def _samples(response) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
def busy_cluster(cluster, submit):
    for i in range(2):
        submit("nlp", f"borrow-{i}", gpus=8)
    run_cycle()
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    submit("vision", "owner", gpus=8)
    submit("vision", "waiting", gpus=8)
    run_cycle()
    return cluster


def test_metrics_show_cycles_queues_workloads_and_preemptions(busy_cluster, client):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    m = _samples(response)
    assert m[("fairway_cycle_duration_seconds_count", ())] == 2
    assert m[("fairway_cycle_duration_seconds_bucket", (("le", "+Inf"),))] == 2
    assert m[("fairway_cycle_decisions_sum", ())] >= 4
    vision = (("level", "project"), ("pool", "a100"), ("queue", "vision"))
    assert m[("fairway_queue_allocated_gpus", vision)] == 8
    assert m[("fairway_queue_deserved_gpus", vision)] == 8
    assert ("fairway_queue_fairshare_gpus", vision) in m
    pending = (("pool", "a100"), ("project", "vision"), ("status", "pending"))
    assert m[("fairway_project_workloads", pending)] == 1
    assert m[("fairway_preemptions_total", (("reason", "reclaim"),))] == 1
    assert m[("fairway_workloads", (("status", "running"),))] == 2
    assert m[("fairway_nodes", (("pool", "a100"), ("state", "ready")))] == 2


def test_metrics_take_the_same_queries_whatever_the_size(
    busy_cluster, client, submit, django_assert_num_queries
):
    with django_assert_num_queries(5):
        client.get("/metrics")
    for i in range(5):
        submit("infra", f"more-{i}", gpus=1)
    run_cycle()
    with django_assert_num_queries(5):
        client.get("/metrics")


def test_metrics_can_require_authentication(cluster, client, settings):
    settings.METRICS_REQUIRE_AUTH = True
    assert client.get("/metrics").status_code == 401
    client.force_login(cluster["viewer"])
    assert client.get("/metrics").status_code == 200
