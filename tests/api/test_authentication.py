"""Personal tokens and the session: who the API thinks you are."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_core.models import ApiToken
from scheduler_core.services.tokens import token_create, token_revoke

ME = "/api/v1/me/"


@pytest.mark.parametrize("keyword", ["Bearer", "Token", "bearer"])
def test_token_in_either_header_form_signs_the_user_in(cluster, keyword):
    _, raw = token_create(user=cluster["researcher"], name="laptop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {raw}")
    response = client.get(ME)
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
    assert response.json()["role"] == "researcher"


def test_no_credentials_is_401_with_a_bearer_challenge(cluster):
    response = APIClient().get("/api/v1/workloads/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"] == "not_authenticated"


@pytest.mark.parametrize(
    "header",
    ["Bearer fw_not-a-real-token", "Bearer something-else", "Bearer", "Token a b"],
)
def test_bad_tokens_are_401_never_a_session_fallback(cluster, header):
    client = APIClient()
    client.force_login(cluster["admin"])  # even with a session, a bad token is refused
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(ME)
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_failed"


def test_a_revoked_token_stops_working(cluster):
    token, raw = token_create(user=cluster["researcher"], name="old")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get(ME).status_code == 200
    token_revoke(user=cluster["researcher"], token=token)
    assert client.get(ME).status_code == 401


def test_a_deactivated_users_token_is_refused(cluster):
    _, raw = token_create(user=cluster["researcher"], name="t")
    cluster["researcher"].is_active = False
    cluster["researcher"].save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get(ME).status_code == 401


def test_last_used_is_recorded_at_most_once_a_minute(cluster, django_assert_num_queries):
    token, raw = token_create(user=cluster["researcher"], name="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.get(ME)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    client.get(ME)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first  # within the minute
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    client.get(ME)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first - timedelta(seconds=1)
    assert ApiToken.objects.get(pk=token.pk).last_used_at <= timezone.now()


def test_only_the_hash_is_stored(cluster):
    token, raw = token_create(user=cluster["researcher"], name="t")
    assert raw not in token.key_hash
    assert raw.startswith("fw_") and token.prefix == raw[:10]


def test_session_sign_in_works_for_the_console(cluster):
    client = APIClient()
    client.force_login(cluster["viewer"])
    response = client.get(ME)
    assert response.status_code == 200
    assert response.json()["username"] == "victor"


def test_session_writes_need_the_csrf_token(cluster):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(cluster["researcher"])
    response = client.post(
        "/api/v1/workloads/", {"project": "vision", "name": "x", "gpus": 1}, format="json"
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_tokens_list_create_revoke_show_the_key_once(cluster, token_client):
    client = token_client(cluster["researcher"])
    created = client.post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["key"].startswith("fw_") and body["prefix"] == body["key"][:10]
    listed = client.get("/api/v1/tokens/").json()["results"]
    assert {t["name"] for t in listed} >= {"ci"}
    assert all("key" not in t for t in listed)
    assert client.delete(f"/api/v1/tokens/{body['id']}/").status_code == 204
    again = APIClient()
    again.credentials(HTTP_AUTHORIZATION=f"Bearer {body['key']}")
    assert again.get(ME).status_code == 401


def test_token_names_are_unique_per_user(cluster, researcher_api):
    assert researcher_api.post("/api/v1/tokens/", {"name": "ci"}, format="json").status_code == 201
    again = researcher_api.post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert again.status_code == 409
    assert "already have a token" in again.json()["fields"]["name"][0]


def test_another_users_token_cannot_be_revoked(cluster, client_as):
    token, _ = token_create(user=cluster["nlp_researcher"], name="bobs")
    response = client_as("researcher").delete(f"/api/v1/tokens/{token.pk}/")
    assert response.status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_a_script_gets_its_first_token_with_username_and_password(cluster):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Basic " + _basic("alice", "pw-12345678"))
    created = client.post("/api/v1/tokens/", {"name": "laptop"}, format="json")
    assert created.status_code == 201
    token_api = APIClient()
    token_api.credentials(HTTP_AUTHORIZATION=f"Bearer {created.json()['key']}")
    assert token_api.get(ME).json()["username"] == "alice"
    # a password is good for getting a token, nothing else
    assert client.get("/api/v1/workloads/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION="Basic " + _basic("alice", "wrong"))
    assert client.post("/api/v1/tokens/", {"name": "x"}, format="json").status_code == 401


def _basic(username: str, password: str) -> str:
    import base64

    return base64.b64encode(f"{username}:{password}".encode()).decode()
