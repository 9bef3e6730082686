"""API test fixtures: clients signed in as each role of the `cluster` fixture."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from scheduler_core.services.tokens import token_create

ROLES = ("system_admin", "department_admin", "researcher", "viewer", "outsider", "anonymous")
ROLE_TO_CLUSTER_KEY = {
    "system_admin": "admin",
    "department_admin": "dept_admin",
    "researcher": "researcher",
    "viewer": "viewer",
    "outsider": "outsider",
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """The fixture users are many; hash their passwords quickly."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def client_as(cluster):
    """`client_as("researcher")` is an APIClient signed in as that role (or anonymous)."""

    def make(role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            client.force_authenticate(user=cluster[ROLE_TO_CLUSTER_KEY[role]])
        return client

    return make


@pytest.fixture
def admin_api(client_as) -> APIClient:
    return client_as("system_admin")


@pytest.fixture
def researcher_api(client_as) -> APIClient:
    return client_as("researcher")


@pytest.fixture
def token_client(cluster):
    """`token_client(user)` is an APIClient that sends a fresh personal token."""

    def make(user) -> APIClient:
        _, raw = token_create(user=user, name=f"test-{uuid.uuid4().hex}")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make
