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


@pytest.fixture
def sign_in_limits(settings):
    settings.SIGN_IN_FAILURES_PER_USERNAME = 3
    settings.SIGN_IN_FAILURES_PER_ADDRESS = 5
    settings.SIGN_IN_FAILURE_WINDOW = 600


def _token_with_password(username: str, password: str, address: str = "10.0.0.1"):
    client = APIClient(REMOTE_ADDR=address)
    client.credentials(HTTP_AUTHORIZATION="Basic " + _basic(username, password))
    return client.post("/api/v1/tokens/", {"name": f"t-{password}"}, format="json")


def test_password_guessing_on_tokens_is_429_per_username(cluster, sign_in_limits):
    for _ in range(3):
        assert _token_with_password("alice", "wrong").status_code == 401
    response = _token_with_password("alice", "pw-12345678")  # even the right one now
    assert response.status_code == 429
    body = response.json()
    assert body["error"] == "too_many_sign_in_failures"
    assert "try again in" in body["detail"]
    assert 0 < body["retry_after"] <= 600
    assert response["Retry-After"] == str(body["retry_after"])
    assert not ApiToken.objects.filter(user=cluster["researcher"]).exists()
    # another user from another address is not locked out by alice's guesses
    assert _token_with_password("bob", "pw-12345678", address="10.0.0.2").status_code == 201


def test_password_guessing_on_tokens_is_429_per_address(cluster, sign_in_limits):
    for i in range(5):
        assert _token_with_password(f"user-{i}", "wrong").status_code == 401
    assert _token_with_password("alice", "pw-12345678").status_code == 429
    assert _token_with_password("alice", "pw-12345678", address="10.0.0.9").status_code == 201


def test_the_lockout_ends_with_its_window(cluster, sign_in_limits, settings, monkeypatch):
    import time

    for _ in range(3):
        _token_with_password("alice", "wrong")
    assert _token_with_password("alice", "pw-12345678").status_code == 429
    later = time.time() + 600
    monkeypatch.setattr(time, "time", lambda: later)
    assert _token_with_password("alice", "pw-12345678").status_code == 201
