"""An agent is trusted only as far as its credential and the schema layer allow (issue 35,
sections 2 and 3): driven through the real ASGI application, its channel layer (Redis when
REDIS_URL is set) and database, by a fake agent that sends what a broken or hostile node
could send."""

from __future__ import annotations

import time

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command
from django.utils import timezone
from fairway_agent import protocol
from rest_framework.test import APIClient

from api.consumers import agents as consumer
from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import GpuSample, JoinToken, LogChunk, Node, PodRun, Workload
from scheduler_core.models.agents import PodRunState
from scheduler_core.services.agents import join_token_create, join_token_state
from scheduler_core.services.removal import node_delete
from tests import factories
from tests.runtime.agent.fake_agent import FakeAgent, registration
from tests.runtime.agent.test_transport import greeted, isolated_channel_layer, pod_run, run

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["isolated_channel_layer"]  # the fixture, used by every test here

HELLO = (
    '{"v":1,"seq":1,"type":"hello","node":"gpu-a","agent_version":"0.1.0","devices":[],'
    '"cpu":CPU,"memory_gib":MEM,"max_epoch":0,"runs":[]}'
)


@pytest.fixture
def pool():
    return factories.pool("agents", backend="agent")


@pytest.fixture
def join(pool):
    return join_token_create(pool=pool, by=None)[1]


def post_register(join: str, hostname: str = "gpu-a", **overrides):
    return APIClient().post(
        "/api/v1/agents/register/", registration(join, hostname, **overrides), format="json"
    )


@pytest.fixture
def registered(join):
    response = post_register(join)
    assert response.status_code == 201, response.json()
    return Node.objects.get(name="gpu-a"), response.json()["node_token"]


async def still_alive(agent: FakeAgent) -> None:
    """The connection lives: a heartbeat is acknowledged."""
    await agent.send("heartbeat")
    answer = await agent.receive()
    assert answer["type"] == "ack", answer


def running_run(node: Node) -> PodRun:
    workload = factories.running_workload(factories.project(), [node])
    return PodRun.objects.create(
        workload=workload, node=node, pod_index=0, epoch=1, state=PodRunState.RUNNING,
        allocation=workload.allocations.get(), started_at=timezone.now(),
    )  # fmt: skip


# --- section 3: bad input ----------------------------------------------------------------


@pytest.mark.parametrize(("cpu", "memory"), [("NaN", "256"), ("32", "1e999"), ("-1", "2")])
def test_a_hello_with_an_impossible_number_is_refused_and_the_nodes_list_still_works(
    registered, cpu, memory
):
    node, token = registered
    admin = factories.user("root", superuser=True)

    async def body():
        agent = FakeAgent(token)
        await agent.connect()
        await agent.send_raw(HELLO.replace("CPU", cpu).replace("MEM", memory))
        error = await agent.receive()
        assert error["type"] == "error" and error["code"] == protocol.ERR_MALFORMED
        assert "cpu" in error["message"] or "memory_gib" in error["message"]
        agent.seq = 1
        assert (await agent.hello(node.name))["type"] == "welcome"  # a good one is welcome
        await agent.close()

    run(body)
    node.refresh_from_db()
    assert node.cpu == 32 and node.memory == 256
    client = APIClient()
    client.force_authenticate(admin)
    assert client.get("/api/v1/nodes/").status_code == 200
    assert client.get(f"/api/v1/nodes/{node.name}/").status_code == 200
    client.force_login(admin)
    assert client.get(f"/nodes/{node.pk}/").status_code == 200


@pytest.mark.parametrize(
    "frame",
    [
        "[" * 100_000 + "]" * 100_000,  # nested past any parser's recursion
        '{"v":1,"seq":2,"type":"heartbeat","x":' + "[" * 40 + "]" * 40 + "}",
        '{"v":1,"seq":2,"type":"run_state","run":1,"epoch":1180591620717411303424,'
        '"state":"running"}',
        '{"v":1,"seq":2,"type":"usage","at":"2026-01-01T00:00:00Z",'
        '"gpus":[{"index":1099511627776}],"runs":[]}',
        '{"v":1,"seq":1180591620717411303424,"type":"heartbeat"}',
        "x" * (protocol.MAX_FRAME_BYTES + 1),
    ],
    ids=["deep-json", "deep-field", "epoch-2^70", "gpu-index-2^40", "seq-2^70", "huge"],
)
def test_a_frame_out_of_bounds_gets_an_error_and_the_connection_lives(registered, frame):
    node, token = registered

    async def body():
        agent = await greeted(token, node)
        await agent.send_raw(frame)
        error = await agent.receive()
        assert error["type"] == "error", error
        assert error["code"] in (protocol.ERR_MALFORMED, protocol.ERR_TOO_LARGE)
        agent.seq = error["ack"]  # the last frame it processed
        await still_alive(agent)
        await agent.close()

    run(body)


def test_a_hello_with_max_epoch_2_70_or_10000_gpus_is_refused(registered):
    node, token = registered
    devices = [
        {"index": i, "uuid": f"GPU-{i}", "model": "H100", "memory_mib": 1} for i in range(10_000)
    ]

    async def body():
        agent = FakeAgent(token)
        await agent.connect()
        for fields in ({"max_epoch": 2**70}, {"devices": devices}):
            await agent.send(
                "hello", node=node.name, agent_version="0.1.0", address="", cpu=1,
                memory_gib=1, runs=[], **{"max_epoch": 0, "devices": [], **fields},
            )  # fmt: skip
            error = await agent.receive()
            assert error["code"] == protocol.ERR_MALFORMED, error
        await agent.close()

    run(body)
    node.refresh_from_db()
    assert node.gpu_count == 2 and node.last_epoch < 2**63


@pytest.mark.parametrize(
    "bad", [{"exit_code": 2**40}, {"signal": "SIG" + "X" * 500}], ids=["exit-2^40", "signal"]
)
def test_an_exit_report_with_a_bad_field_gets_an_error_but_the_run_still_ends(registered, bad):
    node, token = registered
    pod = running_run(node)

    async def body():
        agent = FakeAgent(token)
        await agent.connect()
        await agent.hello(node.name, runs=[{"run": pod.pk, "epoch": 1, "state": "running"}])
        await agent.send(
            "run_state", run=pod.pk, epoch=1, state="exited",
            **{"exit_code": None, "signal": None, **bad},
        )  # fmt: skip
        error = await agent.receive()
        assert error["type"] == "error" and error["code"] == protocol.ERR_MALFORMED
        await still_alive(agent)
        await agent.close()

    run(body)
    pod.refresh_from_db()
    assert pod.state not in (PodRunState.RUNNING, PodRunState.STARTING)
    assert "invalid" in pod.reason
    workload = Workload.objects.get(pk=pod.workload_id)
    assert workload.status != WorkloadStatus.RUNNING  # not `running` forever


def test_a_runs_log_is_cut_at_the_cap_and_says_where(registered, settings):
    settings.AGENT_LOG_MAX_BYTES = 1000
    node, token = registered
    pod = pod_run(node)

    async def body():
        agent = await greeted(token, node)
        for i in range(3):
            assert (await agent.log(pod.pk, i * 600, b"y" * 600))["type"] == "ack"
        await agent.close()

    run(body)
    pod.refresh_from_db()
    stored = b"".join(bytes(c.data) for c in LogChunk.objects.filter(run=pod))
    assert stored.startswith(b"y" * 1000) and b"y" * 1001 not in stored
    assert b"the log is cut here, at 1000 bytes" in stored
    assert pod.log_size >= 1800  # the agent's offsets go on: no resend loop


def test_usage_samples_dated_in_the_future_are_stored_at_the_servers_time(registered):
    node, token = registered

    async def body():
        agent = await greeted(token, node)
        gpus = [{"index": 0, "utilization": 50, "memory_used_mib": 1, "memory_total_mib": 2}]
        await agent.send("usage", at="9999-12-31T00:00:00Z", gpus=gpus, runs=[])
        assert (await agent.receive())["type"] == "ack"
        await agent.close()

    run(body)
    sample = GpuSample.objects.get(node=node)
    assert sample.at <= timezone.now()


def test_frames_over_the_rate_wait_and_none_is_lost(registered, settings):
    settings.AGENT_MAX_FRAMES_PER_SECOND = 20
    settings.AGENT_FRAME_BURST = 2
    node, token = registered

    async def body():
        agent = await greeted(token, node)
        began = time.monotonic()
        for _ in range(12):
            await agent.send("heartbeat")
        answers = [await agent.receive() for _ in range(12)]
        assert [a["type"] for a in answers] == ["ack"] * 12
        assert time.monotonic() - began >= 0.4  # 11 frames over a burst of 2 at 20/s
        await agent.close()

    run(body)


def test_deep_json_on_the_events_socket_gets_an_error_and_the_socket_lives():
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from config.routing import websocket_urlpatterns

    user = factories.user("ada")

    async def body():
        ws = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/events/")
        ws.scope["user"] = user
        assert (await ws.connect())[0]
        await ws.send_to(text_data="[" * 100_000 + "]" * 100_000)
        error = await ws.receive_json_from(timeout=5)
        assert error["type"] == "error"
        await ws.send_json_to({"action": "ping"})
        assert (await ws.receive_json_from(timeout=5))["type"] == "pong"
        await ws.disconnect()

    run(body)


# --- section 2: trust as long as the credential ---------------------------------------------


def test_registering_again_closes_the_old_connection(registered, join):
    node, token = registered

    async def body():
        agent = await greeted(token, node)
        response = await database_sync_to_async(post_register)(join, node_token=token)
        assert response.status_code == 201
        error = await agent.receive()
        assert error["code"] == protocol.ERR_UNAUTHORIZED
        assert await agent.closed_with() == protocol.CLOSE_UNAUTHORIZED

    run(body)


@pytest.mark.parametrize("how", ["api", "manage.py"])
def test_revoking_a_credential_closes_the_connection_at_once(registered, how):
    node, token = registered
    admin = factories.user("root", superuser=True)

    def revoke():
        if how == "api":
            client = APIClient()
            client.force_authenticate(admin)
            response = client.post(f"/api/v1/nodes/{node.name}/revoke-credential/")
            assert response.status_code == 200, response.json()
        else:
            call_command("agent_revoke", node.name)

    async def body():
        agent = await greeted(token, node)
        await database_sync_to_async(revoke)()
        assert (await agent.receive())["code"] == protocol.ERR_UNAUTHORIZED
        assert await agent.closed_with() == protocol.CLOSE_UNAUTHORIZED
        again = FakeAgent(token)  # and the credential no longer opens one
        await again.connect()
        assert (await again.receive())["code"] == protocol.ERR_UNAUTHORIZED

    run(body)


def test_a_deleted_nodes_connection_is_closed_and_its_heartbeats_refused(registered):
    node, token = registered
    admin = factories.user("root", superuser=True)

    async def body():
        agent = await greeted(token, node)
        await database_sync_to_async(node_delete)(user=admin, node=node)
        assert (await agent.receive())["code"] == protocol.ERR_UNAUTHORIZED
        assert await agent.closed_with() == protocol.CLOSE_UNAUTHORIZED

    run(body)
    assert not Node.objects.filter(name="gpu-a").exists()


def test_a_credential_is_checked_again_while_the_connection_lives(registered, monkeypatch):
    """Even when the close message is lost (the channel layer was down), the next check
    finds the revoked credential."""
    monkeypatch.setattr(consumer, "CREDENTIAL_RECHECK", 0.0)
    node, token = registered

    async def body():
        agent = await greeted(token, node)
        await database_sync_to_async(
            lambda: node.credential.__class__.objects.filter(node=node).update(
                revoked_at=timezone.now()
            )
        )()
        await agent.send("heartbeat")
        assert (await agent.receive())["code"] == protocol.ERR_UNAUTHORIZED
        assert await agent.closed_with() == protocol.CLOSE_UNAUTHORIZED

    run(body)


def test_join_tokens_expire_by_default_and_a_single_use_one_registers_one_node(pool, settings):
    token, _ = join_token_create(pool=pool, by=None)
    assert token.expires_at is not None
    assert 0 < (token.expires_at - timezone.now()).total_seconds() <= settings.JOIN_TOKEN_TTL

    once, raw = join_token_create(pool=pool, by=None, single_use=True)
    assert post_register(raw, "gpu-a").status_code == 201
    second = post_register(raw, "gpu-b")
    assert second.status_code == 401 and "used" in str(second.json())
    assert join_token_state(JoinToken.objects.get(pk=once.pk)) == "used"


def test_a_join_token_alone_cannot_take_over_a_registered_nodes_name(registered, join):
    node, token = registered
    taken = post_register(join)
    assert taken.status_code == 409 and "credential" in str(taken.json())
    assert post_register(join, node_token="fwn_wrong").status_code == 409
    # with the node's own credential, or once an admin revoked it, it registers
    assert post_register(join, node_token=token).status_code == 201
    call_command("agent_revoke", node.name)
    assert post_register(join).status_code == 201
