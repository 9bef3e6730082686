"""Fairway's proxy to interactive pods, through the real ASGI application, to a real pod
process: who may open a pod's page, what reaches the pod and what comes back, websockets
both ways, and a pod that does not answer."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.test import Client

from benchmarks.agent_stack import free_port
from tests.live_events.sockets import run
from tests.proxy.conftest import running_with_port

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://testserver")


def cookie_of(user) -> bytes:
    browser = Client()
    browser.force_login(user)
    return f"sessionid={browser.cookies['sessionid'].value}; theirs=kept".encode()


def get(path: str, headers: list[tuple[bytes, bytes]], method: str = "GET", body: bytes = b""):
    from config.asgi import application

    async def body_():
        communicator = HttpCommunicator(application, method, path, body=body, headers=headers)
        return await communicator.get_response(timeout=10)

    return run(body_)


def header(response, name: bytes) -> bytes | None:
    return next((v for n, v in response["headers"] if n.lower() == name), None)


def test_a_user_who_may_see_the_workload_gets_the_pods_answer(cluster, pod_port):
    workload = running_with_port(cluster, port=pod_port)
    path = f"/proxy/{workload.pk}/main-0/web/api/x?q=1"
    headers = [
        (b"cookie", cookie_of(cluster["researcher"])),
        (b"host", b"testserver"),
        (b"authorization", b"Bearer fw_secret"),
        (b"accept", b"application/json"),
    ]
    response = get(path, headers)
    assert response["status"] == 200
    seen = json.loads(response["body"])
    assert seen["path"] == path  # the prefix reaches the pod: apps serve under it
    assert (
        "sessionid" not in seen["headers"]["cookie"] and "theirs=kept" in seen["headers"]["cookie"]
    )
    assert "authorization" not in seen["headers"]
    assert seen["headers"]["x-forwarded-prefix"] == f"/proxy/{workload.pk}/main-0/web"
    assert header(response, b"set-cookie") is None  # the pod may not set Fairway's session


def test_a_post_reaches_the_pod_with_its_body(cluster, pod_port):
    workload = running_with_port(cluster, port=pod_port)
    body = b"x=1&" * 5000
    headers = [(b"cookie", cookie_of(cluster["researcher"])),
               (b"content-length", str(len(body)).encode())]  # fmt: skip
    response = get(f"/proxy/{workload.pk}/main-0/web/save", headers, "POST", body)
    assert response["status"] == 200
    seen = json.loads(response["body"])
    assert (seen["method"], seen["body"]) == ("POST", body.decode())


def test_another_departments_user_gets_404_and_an_anonymous_one_is_refused(cluster, pod_port):
    workload = running_with_port(cluster, port=pod_port)
    path = f"/proxy/{workload.pk}/main-0/web/"
    outsider = factories_user_of_other_department(cluster)
    assert get(path, [(b"cookie", cookie_of(outsider))])["status"] == 404
    assert get(path, [(b"cookie", cookie_of(cluster["researcher"]))])["status"] == 200
    assert (
        get(f"/proxy/{workload.pk}/main-0/other/", [(b"cookie", cookie_of(cluster["researcher"]))])[
            "status"
        ]
        == 404
    )
    anonymous = get(path, [(b"accept", b"application/json")])
    assert anonymous["status"] == 401
    page = get(path, [(b"accept", b"text/html,application/xhtml+xml")])
    assert page["status"] == 302
    assert (
        header(page, b"location")
        == f"/login/?next=%2Fproxy%2F{workload.pk}%2Fmain-0%2Fweb%2F".encode()
    )


def factories_user_of_other_department(cluster):
    from tests import factories

    return factories.researcher(cluster["infra"], "ivan")


def test_a_pod_that_does_not_listen_gives_502_with_a_message(cluster):
    workload = running_with_port(cluster, port=free_port())
    response = get(
        f"/proxy/{workload.pk}/main-0/web/", [(b"cookie", cookie_of(cluster["researcher"]))]
    )
    assert response["status"] == 502
    text = response["body"].decode()
    assert "pod main-0 does not answer on its port web" in text
    assert "FAIRWAY_PORT_WEB" in text


def test_a_websocket_echoes_text_and_binary_and_passes_close_codes(cluster, pod_port):
    from config.asgi import application

    workload = running_with_port(cluster, port=pod_port)
    headers = [(b"cookie", cookie_of(cluster["researcher"])), ORIGIN, (b"host", b"testserver")]

    async def body():
        ws = WebsocketCommunicator(
            application, f"/proxy/{workload.pk}/main-0/web/ws", headers=headers
        )
        connected, _ = await ws.connect(timeout=10)
        assert connected
        await ws.send_to(text_data="hello")
        assert await ws.receive_from(timeout=10) == "hello"
        await ws.send_to(bytes_data=b"\x00\x01binary")
        out = await ws.receive_output(timeout=10)
        assert out == {"type": "websocket.send", "bytes": b"\x00\x01binary"}
        await ws.send_to(text_data="close-4321")
        closed = await ws.receive_output(timeout=10)
        assert closed["type"] == "websocket.close" and closed["code"] == 4321

    run(body)


def test_a_websocket_of_an_outsider_or_an_anonymous_user_is_refused(cluster, pod_port):
    from config.asgi import application

    workload = running_with_port(cluster, port=pod_port)
    outsider = cookie_of(factories_user_of_other_department(cluster))

    async def body():
        for headers in ([ORIGIN], [ORIGIN, (b"cookie", outsider)]):
            ws = WebsocketCommunicator(
                application, f"/proxy/{workload.pk}/main-0/web/ws", headers=headers
            )
            connected, code = await ws.connect(timeout=10)
            assert not connected and code in (4401, 4404)

    run(body)


def test_the_workload_page_shows_an_open_link_per_port_of_each_running_pod(cluster, pod_port):
    workload = running_with_port(cluster, port=pod_port)
    browser = Client()
    browser.force_login(cluster["researcher"])
    html = browser.get(f"/workloads/{workload.pk}/").content.decode()
    assert f'href="/proxy/{workload.pk}/main-0/web/"' in html
    assert "Open web" in html


def test_a_simulated_workload_with_ports_says_nothing_can_be_opened(cluster):
    from tests import factories

    spec = {"duration": 60, "ports": [{"name": "web"}]}
    workload = factories.running_workload(cluster["vision"], cluster["nodes"][:1], spec=spec)
    browser = Client()
    browser.force_login(cluster["researcher"])
    html = browser.get(f"/workloads/{workload.pk}/").content.decode()
    assert "no process runs, so nothing serves these ports" in html
    assert "/proxy/" not in html


def test_the_api_gives_each_open_port_its_proxy_path(cluster, pod_port):
    from rest_framework.test import APIClient

    workload = running_with_port(cluster, port=pod_port)
    api = APIClient()
    api.force_authenticate(cluster["researcher"])
    ports = api.get(f"/api/v1/workloads/{workload.pk}/").json()["ports"]
    assert ports == [
        {"pod": "main-0", "name": "web", "path": f"/proxy/{workload.pk}/main-0/web/",
         "host": "127.0.0.1", "port": pod_port}
    ]  # fmt: skip
