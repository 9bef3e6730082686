"""/metrics: Prometheus text read from the database in constant queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Workload
from scheduler_core.services.quotas import queue_owner_set_quota

pytestmark = pytest.mark.django_db

SCRAPE_TOKEN = "scrape-me-0123456789"


@pytest.fixture
def scraper(client, settings):
    """The test client sending the metrics scrape token."""
    settings.METRICS_TOKEN = SCRAPE_TOKEN
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {SCRAPE_TOKEN}"
    return client


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
    # the borrowed runs have lasted an hour when one is reclaimed
    Workload.objects.filter(project=cluster["nlp"]).update(
        started_at=timezone.now() - timedelta(hours=1)
    )
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    submit("vision", "owner", gpus=8)
    submit("vision", "waiting", gpus=8)
    run_cycle()
    return cluster


def test_metrics_show_cycles_queues_workloads_and_preemptions(busy_cluster, scraper):
    response = scraper.get("/metrics")
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
    lost = m[("fairway_lost_gpu_seconds_total", (("cause", "preemption"), ("project", "nlp")))]
    assert 8 * 3600 <= lost < 8 * 3660  # 8 GPUs for an hour
    assert m[("fairway_workloads", (("status", "running"),))] == 2
    assert m[("fairway_nodes", (("pool", "a100"), ("state", "ready")))] == 2


def test_metrics_take_the_same_queries_whatever_the_size(
    busy_cluster, scraper, submit, django_assert_num_queries
):
    with django_assert_num_queries(8):
        scraper.get("/metrics")
    for i in range(5):
        submit("infra", f"more-{i}", gpus=1)
    run_cycle()
    with django_assert_num_queries(8):
        scraper.get("/metrics")


@pytest.mark.parametrize(
    ("authorization", "status", "error"),
    [
        (None, 401, "not_authenticated"),
        ("Bearer wrong-scrape-token", 401, "authentication_failed"),
        ("Bearer fw_not-a-real-token", 401, "authentication_failed"),
        (f"Bearer {SCRAPE_TOKEN}", 200, None),
        (f"bearer {SCRAPE_TOKEN}", 200, None),
    ],
)
def test_metrics_need_credentials_or_the_scrape_token(
    cluster, client, settings, authorization, status, error
):
    settings.METRICS_TOKEN = SCRAPE_TOKEN
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == status
    if error:
        assert response.json()["error"] == error
        assert "vision" not in response.content.decode()
    if status == 401:
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_without_a_scrape_token_setting_no_bearer_value_opens_the_metrics(client, settings, db):
    settings.METRICS_TOKEN = ""
    for value in ("Bearer ", "Bearer", "Bearer  "):
        assert client.get("/metrics", HTTP_AUTHORIZATION=value).status_code == 401


@pytest.mark.parametrize(
    ("role", "status"), [("admin", 200), ("dept_admin", 403), ("researcher", 403), ("viewer", 403)]
)
def test_only_system_admins_read_the_metrics_with_their_session_or_token(
    cluster, client, token_client, role, status
):
    client.force_login(cluster[role])
    response = client.get("/metrics")
    assert response.status_code == status
    if status == 403:
        assert response.json() == {
            "error": "permission_denied",
            "detail": "only system admins read the metrics",
        }
    client.logout()
    assert token_client(cluster[role]).get("/metrics").status_code == status


def test_a_preemption_loop_is_an_event_a_counter_and_a_held_workload(cluster, submit, scraper):
    from scheduler_core.choices import EventType
    from scheduler_core.models import SchedulingEvent

    for i in range(2):
        submit("nlp", f"borrow-{i}", gpus=8)
    run_cycle()
    # both were evicted twice already, each soon after its start; they ran 10 minutes
    Workload.objects.filter(project=cluster["nlp"]).update(
        started_at=timezone.now() - timedelta(minutes=10), quick_evictions=2, preemptions=2
    )
    cluster["pool"].preemption_loop_evictions = 3
    cluster["pool"].save()
    queue_owner_set_quota(user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=0)
    submit("vision", "owner", gpus=8)
    run_cycle()
    (loop,) = SchedulingEvent.objects.filter(type=EventType.PREEMPTION_LOOP)
    assert (
        loop.reason == "preemption loop: evicted 3 times in a row, each within 60 min of starting"
    )
    assert loop.details == {"quick_evictions": 3, "preemptions": 3}
    assert _samples(scraper.get("/metrics"))[("fairway_preemption_loops_total", ())] == 1
    run_cycle()
    held = Workload.objects.get(pk=loop.workload_id)
    assert held.pending_reason_kind == "preemption_loop"
    assert held.pending_reason.startswith("held in a preemption loop: evicted 3 times in a row")
