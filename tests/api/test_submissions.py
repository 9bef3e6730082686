"""Submitting workloads: every shape, bulk all-or-nothing, idempotency and rate limits."""

from __future__ import annotations

import pytest
from django.core.cache.backends.locmem import LocMemCache

from api.throttling import SubmissionThrottle
from scheduler_core.models import IdempotencyKey, Workload

WORKLOADS = "/api/v1/workloads/"


def test_single_gang_elastic_fractional_and_multi_group(researcher_api):
    shapes = {
        "single": {"gpus": 1},
        "gang": {"pods": 2, "gpus": 4},
        "elastic": {"pods": 4, "min_pods": 2, "gpus": 1},
        "fraction": {"gpus": 0.5},
        "multi": {
            "groups": [
                {"name": "launcher", "pods": 1, "cpu": 2},
                {"name": "workers", "pods": 2, "min_pods": 2, "gpus": 2},
            ]
        },
    }
    for name, shape in shapes.items():
        response = researcher_api.post(
            WORKLOADS, {"project": "vision", "name": name, **shape}, format="json"
        )
        assert response.status_code == 201, response.json()
    by_name = {w.name: w for w in Workload.objects.all()}
    assert (by_name["gang"].pods, by_name["gang"].min_pods) == (2, 2)
    assert (by_name["elastic"].pods, by_name["elastic"].min_pods) == (4, 2)
    assert by_name["fraction"].gpus == 0.5
    assert [g["name"] for g in by_name["multi"].groups] == ["launcher", "workers"]
    assert by_name["multi"].total_gpus == 4


def test_everything_a_submission_can_say_comes_back(researcher_api):
    response = researcher_api.post(
        WORKLOADS,
        {
            "project": "vision",
            "name": "full",
            "kind": "interactive",
            "priority": 120,
            "preemptible": True,
            "gpus": 1,
            "cpu": 4,
            "memory": 32,
            "pools": ["a100"],
            "node_selector": {"zone": "eu"},
            "weight": 2,
            "backoff_limit": 3,
            "spec": {
                "image": "pytorch:2",
                "command": ["python", "train.py"],
                "env": {"SEED": "1"},
                "duration": 600,
                "checkpoint_every": 60,
            },
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "pending"
    assert body["pending_reason"]
    assert body["submitted_by"] == "alice"
    assert body["pools"] == ["a100"]
    assert body["node_selector"] == {"zone": "eu"}
    assert (body["kind"], body["priority"], body["preemptible"]) == ("interactive", 120, True)
    assert body["spec"]["duration"] == 600
    assert body["placements"] == []
    # the answer is built from what was just written; a read of it says the same
    assert researcher_api.get(f"{WORKLOADS}{body['id']}/").json() == body


def test_kind_decides_defaults(researcher_api):
    body = researcher_api.post(
        WORKLOADS,
        {"project": "vision", "name": "nb", "kind": "interactive", "gpus": 1},
        format="json",
    ).json()
    assert (body["priority"], body["preemptible"]) == (100, False)


def test_detail_shows_pods_nodes_and_devices(cluster, researcher_api):
    from tests import factories

    running = factories.running_workload(cluster["vision"], cluster["nodes"], gpus=2)
    body = researcher_api.get(f"{WORKLOADS}{running.pk}/").json()
    assert body["status"] == "running"
    assert body["running_pods"] == 2
    assert body["nodes"] == ["gpu-1", "gpu-2"]
    assert [(p["node"], p["gpu_devices"]) for p in body["placements"]] == [
        ("gpu-1", [0, 1]),
        ("gpu-2", [0, 1]),
    ]


def test_actions_change_what_the_user_sees(researcher_api):
    wid = researcher_api.post(
        WORKLOADS, {"project": "vision", "name": "w", "gpus": 1}, format="json"
    ).json()["id"]
    assert researcher_api.post(f"{WORKLOADS}{wid}/suspend/").json()["status"] == "suspended"
    assert researcher_api.post(f"{WORKLOADS}{wid}/resume/").json()["status"] == "pending"
    body = researcher_api.post(f"{WORKLOADS}{wid}/priority/", {"priority": 90}, format="json")
    assert body.json()["priority"] == 90
    assert researcher_api.post(f"{WORKLOADS}{wid}/cancel/").json()["status"] == "cancelled"
    events = researcher_api.get(f"{WORKLOADS}{wid}/events/").json()["results"]
    assert [e["type"] for e in events] == [
        "deleted",
        "priority_changed",
        "resumed",
        "suspended",
        "submitted",
    ]


# --- bulk ---------------------------------------------------------------------------------


def test_bulk_creates_all(researcher_api):
    response = researcher_api.post(
        f"{WORKLOADS}bulk/",
        {"workloads": [{"project": "vision", "name": f"sweep-{i}", "gpus": 1} for i in range(5)]},
        format="json",
    )
    assert response.status_code == 201
    assert [w["name"] for w in response.json()] == [f"sweep-{i}" for i in range(5)]
    assert Workload.objects.count() == 5


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (
            {"project": "vision", "name": "sweep-0", "gpus": 1},
            "workloads[2].name",
        ),  # twice in the request
        ({"project": "vision", "name": "x", "gpus": 64}, "workloads[2].gpus"),  # fits no node
        ({"project": "vision", "name": "x", "pools": ["nope"], "gpus": 1}, "workloads[2].pools[0]"),
    ],
)
def test_bulk_is_all_or_nothing(researcher_api, bad, field):
    good = [{"project": "vision", "name": f"sweep-{i}", "gpus": 1} for i in range(2)]
    response = researcher_api.post(f"{WORKLOADS}bulk/", {"workloads": [*good, bad]}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["fields"]
    assert Workload.objects.count() == 0


def test_bulk_into_a_forbidden_project_creates_nothing(researcher_api):
    response = researcher_api.post(
        f"{WORKLOADS}bulk/",
        {
            "workloads": [
                {"project": "vision", "name": "a", "gpus": 1},
                {"project": "infra", "name": "b", "gpus": 1},
            ]
        },
        format="json",
    )
    assert response.status_code == 403
    assert "workloads[1]" in response.json()["detail"]
    assert Workload.objects.count() == 0


def test_bulk_needs_at_least_one(researcher_api):
    response = researcher_api.post(f"{WORKLOADS}bulk/", {"workloads": []}, format="json")
    assert response.status_code == 400


# --- idempotency --------------------------------------------------------------------------


def test_a_retried_submission_is_replayed_not_duplicated(researcher_api):
    body = {"project": "vision", "name": "once", "gpus": 1}
    first = researcher_api.post(WORKLOADS, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    second = researcher_api.post(WORKLOADS, body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Workload.objects.count() == 1


def test_the_same_key_with_another_body_is_409(researcher_api):
    researcher_api.post(
        WORKLOADS,
        {"project": "vision", "name": "a", "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    response = researcher_api.post(
        WORKLOADS,
        {"project": "vision", "name": "b", "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k",
    )
    assert response.status_code == 409
    assert response.json()["error"] == "conflict"
    assert Workload.objects.count() == 1


def test_a_failed_submission_can_be_retried_with_its_key(researcher_api):
    bad = {"project": "vision", "name": "w", "gpus": 64}
    assert (
        researcher_api.post(WORKLOADS, bad, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code
        == 400
    )
    assert not IdempotencyKey.objects.exists()
    good = {"project": "vision", "name": "w", "gpus": 1}
    assert (
        researcher_api.post(WORKLOADS, good, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code
        == 201
    )


def test_keys_belong_to_their_user(client_as):
    body = {"project": "vision", "name": "w", "gpus": 1}
    alice, admin = client_as("researcher"), client_as("system_admin")
    assert alice.post(WORKLOADS, body, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    response = admin.post(WORKLOADS, body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 409  # a fresh request for admin: the name is taken


def test_bulk_is_idempotent_too(researcher_api):
    body = {"workloads": [{"project": "vision", "name": f"s-{i}", "gpus": 1} for i in range(3)]}
    first = researcher_api.post(f"{WORKLOADS}bulk/", body, format="json", HTTP_IDEMPOTENCY_KEY="b")
    again = researcher_api.post(f"{WORKLOADS}bulk/", body, format="json", HTTP_IDEMPOTENCY_KEY="b")
    assert first.json() == again.json()
    assert Workload.objects.count() == 3


def test_an_overlong_key_is_400(researcher_api):
    response = researcher_api.post(
        WORKLOADS,
        {"project": "vision", "name": "w", "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k" * 300,
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["fields"]


# --- rate limits --------------------------------------------------------------------------


@pytest.fixture
def tiny_rate(settings, monkeypatch):
    """2 submissions a minute, counted in a private cache (never the shared Redis)."""
    monkeypatch.setattr(SubmissionThrottle, "cache", LocMemCache("throttle-test", {}))
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"submissions": "2/min"},
    }


def test_submissions_are_rate_limited_per_token(cluster, token_client, tiny_rate):
    first_token, second_token = (
        token_client(cluster["researcher"]),
        token_client(cluster["researcher"]),
    )
    for i in range(2):
        body = {"project": "vision", "name": f"w-{i}", "gpus": 1}
        assert first_token.post(WORKLOADS, body, format="json").status_code == 201
    response = first_token.post(
        WORKLOADS, {"project": "vision", "name": "w-9", "gpus": 1}, format="json"
    )
    assert response.status_code == 429
    body = response.json()
    assert body["error"] == "throttled"
    assert body["retry_after"] >= 1
    assert int(response["Retry-After"]) == body["retry_after"]
    # reads are not limited, and another token has its own budget
    assert first_token.get(WORKLOADS).status_code == 200
    other = second_token.post(
        WORKLOADS, {"project": "vision", "name": "w-8", "gpus": 1}, format="json"
    )
    assert other.status_code == 201
    assert not Workload.objects.filter(name="w-9").exists()
