"""Password guessing on the console's and the admin's sign-in pages is limited."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

PAGES = ["/login/", "/admin/login/"]


@pytest.fixture(autouse=True)
def sign_in_limits(settings):
    settings.SIGN_IN_FAILURES_PER_USERNAME = 3
    settings.SIGN_IN_FAILURES_PER_ADDRESS = 5
    settings.SIGN_IN_FAILURE_WINDOW = 600


@pytest.mark.parametrize("page", PAGES)
def test_guessing_a_password_is_refused_with_429_and_a_readable_message(cluster, client, page):
    for _ in range(3):
        response = client.post(page, {"username": "admin", "password": "nope"})
        assert response.status_code == 200
        assert "Too many" not in response.content.decode()
    response = client.post(page, {"username": "admin", "password": "pw-12345678"})
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 600
    assert "Too many failed sign-in attempts: try again in" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("page", PAGES)
def test_one_address_cannot_try_many_usernames(cluster, client, page):
    for i in range(5):
        client.post(page, {"username": f"user-{i}", "password": "nope"})
    response = client.post(page, {"username": "admin", "password": "pw-12345678"})
    assert response.status_code == 429
    other = client.__class__(REMOTE_ADDR="10.1.2.3")
    response = other.post(page, {"username": "admin", "password": "pw-12345678"})
    assert response.status_code == 302


def test_failures_count_across_the_console_and_the_admin(cluster, client):
    client.post("/login/", {"username": "admin", "password": "nope"})
    client.post("/admin/login/", {"username": "admin", "password": "nope"})
    client.post("/login/", {"username": "admin", "password": "nope"})
    assert client.post("/admin/login/", {"username": "admin", "password": "x"}).status_code == 429
