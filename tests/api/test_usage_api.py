"""/api/v1/usage/ and /metrics: GPUs held against GPUs used over time, as each user may
see them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_core.services.gpu_usage import gpu_usage_roll_up
from tests.api.test_metrics import SCRAPE_TOKEN, _samples
from tests.usage_samples import send_samples, usage_story


@pytest.fixture
def story(cluster, settings):
    story = usage_story(cluster["vision"], cluster["nlp"], settings)
    now = timezone.now()
    send_samples(story.node, now - timedelta(minutes=3), now, lambda index, at: 4.0)
    gpu_usage_roll_up()
    return story


def _first_hour(body, story):
    return next(
        p for p in body["points"] if p["start"] == story.start.isoformat().replace("+00:00", "Z")
    )


def test_a_pools_usage_over_a_week_names_its_idlest_holders(story, admin_api):
    response = admin_api.get("/api/v1/usage/", {"pool": "local", "window": "7d"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["window"], body["step_seconds"], body["resolution_seconds"]) == ("7d", 3600, 3600)
    point = _first_hour(body, story)
    assert point["held_gpus"] == pytest.approx(1.5)
    assert point["used_gpus"] == pytest.approx(0.94)
    assert point["idle_gpus"] == pytest.approx(0.56)
    assert point["memory_used_mib"] == pytest.approx(40960 + 8192)
    holders = body["idlest_holders"]
    assert [(h["name"], h["project"]) for h in holders] == [("eval", "nlp"), ("train", "vision")]
    assert holders[0]["workload"] == story.eval.pk
    assert holders[0]["utilization"] == pytest.approx(4.0)


def test_an_hour_is_drawn_minute_by_minute(story, admin_api):
    body = admin_api.get("/api/v1/usage/", {"workload": story.eval.pk}).json()
    assert (body["window"], body["step_seconds"], body["resolution_seconds"]) == ("1h", 60, 60)
    assert body["points"][-1]["held_gpus"] == pytest.approx(0.5)


def test_another_departments_researcher_cannot_see_its_usage(story, client_as, cluster):
    alice = client_as("researcher")  # vision: she may not see nlp's eval
    response = alice.get("/api/v1/usage/", {"project": "nlp"})
    assert response.status_code == 400
    assert "project" in response.json()["fields"]
    assert alice.get("/api/v1/usage/", {"workload": story.eval.pk}).status_code == 400
    body = alice.get("/api/v1/usage/", {"pool": "local", "window": "7d"}).json()
    assert [h["name"] for h in body["idlest_holders"]] == ["train"]
    assert _first_hour(body, story)["held_gpus"] == pytest.approx(1.0)


def test_a_bad_window_is_refused_with_the_field(admin_api, cluster):
    response = admin_api.get("/api/v1/usage/", {"window": "3y"})
    assert response.status_code == 400
    assert "window" in response.json()["fields"]


def test_usage_needs_a_sign_in(client_as, cluster):
    assert client_as("anonymous").get("/api/v1/usage/").status_code == 401


def test_metrics_show_gpus_held_and_used_per_pool_and_project(story, client, settings):
    settings.METRICS_TOKEN = SCRAPE_TOKEN
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {SCRAPE_TOKEN}")
    m = _samples(response)
    nlp = (("pool", "local"), ("project", "nlp"))
    nobody = (("pool", "local"), ("project", ""))
    assert m[("fairway_gpus_held", nlp)] == pytest.approx(0.5)
    assert m[("fairway_gpus_used", nlp)] == pytest.approx(0.02)
    assert m[("fairway_gpus_held", nobody)] == 0.0
    assert m[("fairway_gpus_used", nobody)] == pytest.approx(0.06)  # GPU 0 and half of GPU 1
    assert not [k for k in m if k[0] == "fairway_gpus_held" and ("project", "vision") in k[1]]


def test_a_blank_scope_is_refused_with_the_field(admin_api, cluster):
    response = admin_api.get("/api/v1/usage/", {"pool": ""})
    assert response.status_code == 400
    assert response.json()["fields"]["pool"] == ["may not be blank"]
