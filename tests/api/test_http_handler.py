"""The web processes' HTTP handler (config/http_handler.py) and JSON renderer
(api/renderers.py): the answers a client gets through the ASGI application are the ones
Django's own handler and DRF's renderer gave."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator
from django.test import Client
from rest_framework.renderers import JSONRenderer as DrfJSONRenderer

from api.renderers import JSONRenderer
from config.asgi import application
from scheduler_core.services.tokens import token_create
from tests.live_events.sockets import run

pytestmark = pytest.mark.django_db(transaction=True)  # the handler's threads read the data


def asgi_request(method: str, path: str, *, token: str, body: dict | None = None):
    headers = [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())]
    raw = json.dumps(body).encode() if body is not None else b""
    if raw:
        headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
    communicator = HttpCommunicator(application, method, path, body=raw, headers=headers)

    async def response():
        return await communicator.get_response(timeout=30)

    return run(response)


def django_request(path: str, *, token: str):
    return Client().get(path, HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def alice_token(cluster, running):
    return token_create(user=cluster["researcher"], name="asgi")[1]


@pytest.fixture
def running(cluster):
    from tests import factories

    return factories.running_workload(cluster["vision"], cluster["nodes"][:1], gpus=2, name="r")


@pytest.mark.parametrize(
    "path", ["/api/v1/workloads/", "/api/v1/workloads/?status=running", "/api/v1/queues/"]
)
def test_a_list_through_the_asgi_application_is_the_json_django_served(path, alice_token):
    served = asgi_request("GET", path, token=alice_token)
    expected = django_request(path, token=alice_token)
    assert served["status"] == expected.status_code == 200
    assert dict(served["headers"])[b"Content-Type"] == b"application/json"
    assert json.loads(served["body"]) == expected.json()
    assert json.loads(served["body"])["count"] >= 1


def test_a_submission_through_the_asgi_application_is_queued(alice_token, cluster):
    served = asgi_request(
        "POST",
        "/api/v1/workloads/",
        token=alice_token,
        body={"project": "vision", "name": "via-asgi", "gpus": 1},
    )
    assert served["status"] == 201, served["body"][:300]
    listed = django_request("/api/v1/workloads/?name=via-asgi", token=alice_token).json()
    assert [w["status"] for w in listed["results"]] == ["pending"]


def test_a_refusal_through_the_asgi_application_is_the_api_error_shape(alice_token):
    served = asgi_request("GET", "/api/v1/workloads/?limit=0", token=alice_token)
    assert served["status"] == 400
    assert json.loads(served["body"])["error"] == "validation_failed"


@pytest.mark.parametrize(
    "data",
    [
        {"a": [1, 2.5, None, True, "é", "line\u2028break"], "n": 0.1},
        {"when": __import__("datetime").datetime(2026, 11, 27, 12, 0, 0, 123456)},
        {"big": 2**70},
        {1: "integer key"},
    ],
)
def test_the_orjson_renderer_writes_what_drf_wrote(data):
    assert JSONRenderer().render(data) == DrfJSONRenderer().render(data)
