"""The agents' websocket (/ws/agents/) driven by a fake agent through the real ASGI
application: registration via the API, hello/welcome, refusals, sequencing, logs, usage,
and messages the server sends to a node."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.db import database_sync_to_async
from django.utils import timezone
from fairway_agent import protocol
from rest_framework.test import APIClient

from scheduler_core.choices import NodeState
from scheduler_core.models import GpuSample, LogChunk, Node, PodRun, RunUsageSample
from scheduler_core.runtime.executors.agent.channel import send_many
from scheduler_core.services.agents import join_token_create, node_credential_revoke
from tests import factories
from tests.runtime.agent.fake_agent import FakeAgent, registration

pytestmark = pytest.mark.django_db(transaction=True)


def run(test):
    return async_to_sync(test)()


@pytest.fixture(autouse=True)
def isolated_channel_layer(settings):
    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    layer = layers["default"]
    if "redis" in layer["BACKEND"].lower():
        layer.setdefault("CONFIG", {})["prefix"] = f"fairway-test-{uuid.uuid4().hex[:10]}"
    settings.CHANNEL_LAYERS = layers


@pytest.fixture
def pool():
    return factories.pool("agents", backend="agent")


@pytest.fixture
def register(pool):
    """register(hostname) -> (node, node token), through POST /api/v1/agents/register/."""
    _, join = join_token_create(pool=pool, by=None)

    def _register(hostname: str = "gpu-a"):
        response = APIClient().post(
            "/api/v1/agents/register/", registration(join, hostname), format="json"
        )
        assert response.status_code == 201, response.json()
        return Node.objects.get(name=hostname), response.json()["node_token"]

    return _register


def pod_run(node: Node, pod_index: int = 0, epoch: int = 1) -> PodRun:
    workload = factories.workload(factories.project(), pods=1)
    return PodRun.objects.create(workload=workload, node=node, pod_index=pod_index, epoch=epoch)


async def greeted(token: str, node: Node) -> FakeAgent:
    agent = FakeAgent(token)
    await agent.connect()
    welcome = await agent.hello(node.name)
    assert welcome["type"] == "welcome"
    return agent


def test_hello_is_welcomed_with_the_runs_to_keep_and_the_intervals(register, settings):
    node, token = register()
    kept = pod_run(node)
    kept.allocation = factories.running_workload(
        factories.project(), [node]
    ).allocations.get()  # a run that serves an allocation
    kept.log_size = 12
    kept.save()
    Node.objects.filter(pk=node.pk).update(state=NodeState.UNREACHABLE)

    async def body():
        agent = FakeAgent(token)
        await agent.connect()
        welcome = await agent.hello(node.name, runs=[{"run": kept.pk, "epoch": 1}])
        assert welcome["seq"] == 1 and welcome["ack"] == 1
        assert welcome["keep"] == [kept.pk]
        assert welcome["log_offsets"] == {str(kept.pk): 12}
        assert welcome["heartbeat_interval"] == settings.AGENT_HEARTBEAT_INTERVAL
        assert welcome["lost_after"] == settings.AGENT_LOST_AFTER
        assert welcome["fence_after"] >= 10
        await agent.close()

    run(body)
    node.refresh_from_db()
    assert node.state == NodeState.READY  # back from unreachable
    assert node.labels["containers"] == "true"  # the hello's capabilities
    assert node.gpu_count == 2 and node.address == "10.0.0.7"


@pytest.mark.parametrize("which", ["wrong", "revoked", "missing"])
def test_a_bad_credential_is_closed_with_4401_and_a_reason(register, which):
    node, token = register()
    if which == "revoked":
        node_credential_revoke(node=node)
    credential = {"wrong": "fwn_nope", "revoked": token, "missing": None}[which]

    async def body():
        agent = FakeAgent(credential)
        await agent.connect()
        error = await agent.receive()
        assert error["type"] == "error" and error["code"] == protocol.ERR_UNAUTHORIZED
        assert "credential" in error["message"]
        assert await agent.closed_with() == protocol.CLOSE_UNAUTHORIZED

    run(body)


def test_another_nodes_credential_is_closed_with_4403(register):
    _, token_a = register("gpu-a")
    node_b, _ = register("gpu-b")

    async def body():
        agent = FakeAgent(token_a)
        await agent.connect()
        error = await agent.hello(node_b.name)
        assert error["code"] == protocol.ERR_FORBIDDEN and "gpu-a" in error["message"]
        assert await agent.closed_with() == protocol.CLOSE_FORBIDDEN

    run(body)


def test_another_protocol_version_is_closed_with_4400(register):
    _, token = register()

    async def body():
        agent = FakeAgent(token)
        await agent.connect()
        await agent.send_raw('{"v": 2, "seq": 1, "type": "hello"}')
        assert (await agent.receive())["code"] == protocol.ERR_VERSION
        assert await agent.closed_with() == protocol.CLOSE_VERSION

    run(body)


def test_a_frame_is_answered_while_the_database_thread_is_busy(register):
    """Another connection's database work (here a call that holds the process's database
    thread, as a burst of reports does) does not hold up this agent's frames: a bad frame
    is answered at once, not once the thread is free."""
    node, token = register()

    async def body():
        agent = await greeted(token, node)
        release = threading.Event()
        busy = asyncio.ensure_future(database_sync_to_async(release.wait)(10))
        try:
            await agent.send_raw("{not json")
            answer = json.loads(await agent.ws.receive_from(timeout=2))
            assert answer["code"] == protocol.ERR_MALFORMED
        finally:
            release.set()
            await busy
        await agent.close()

    run(body)


def test_a_start_goes_out_while_the_agents_own_frames_wait_for_the_database(register):
    """What the server sends an agent (a start, a stop) is not held up by that agent's
    frames: here a log chunk waits for the process's database thread (busy, as in a burst
    of reports) while a signal for the node goes out at once; the chunk is acknowledged
    once the thread is free."""
    node, token = register()
    pod = pod_run(node)

    async def body():
        agent = await greeted(token, node)
        release = threading.Event()
        busy = asyncio.ensure_future(database_sync_to_async(release.wait)(10))
        try:
            # stored on the database thread: it waits
            chunk = await agent.send("log", run=pod.pk, offset=0, data="aGVsbG8K")
            await sync_to_async(send_many, thread_sensitive=False)(
                [(node.pk, "signal", {"run": 7, "reason": "preempt", "grace_period": 30})]
            )
            signal = json.loads(await agent.ws.receive_from(timeout=2))
            assert signal["type"] == "signal" and signal["run"] == 7
        finally:
            release.set()
            await busy
        ack = await agent.receive()
        assert ack["type"] == "ack" and ack["ack"] == chunk
        await agent.close()

    run(body)


def test_malformed_frames_and_gaps_get_an_error_and_the_connection_stays(register):
    node, token = register()

    async def body():
        agent = await greeted(token, node)
        await agent.send_raw("{not json")
        assert (await agent.receive())["code"] == protocol.ERR_MALFORMED
        await agent.send("heartbeat", seq=5)  # 2..4 never came
        gap = await agent.receive()
        assert gap["code"] == protocol.ERR_OUT_OF_ORDER and "expected seq 2" in gap["message"]
        await agent.send("heartbeat")  # seq 2: the connection still works
        ack = await agent.receive()
        assert ack["type"] == "ack" and ack["ack"] == 2
        await agent.close()

    run(body)


def test_a_repeated_frame_is_acknowledged_again_but_not_processed_twice(register):
    node, token = register()
    pod = pod_run(node)

    async def body():
        agent = await greeted(token, node)
        seq = await agent.send("log", run=pod.pk, offset=0, data="aGVsbG8K")  # "hello\n"
        assert (await agent.receive())["ack"] == seq
        await agent.send("log", seq=seq, run=pod.pk, offset=0, data="aGVsbG8K")
        again = await agent.receive()
        assert again["type"] == "ack" and again["ack"] == seq
        await agent.close()

    run(body)
    assert LogChunk.objects.filter(run=pod).count() == 1


def test_log_chunks_are_stored_complete_in_order_and_a_resend_stores_nothing_twice(register):
    node, token = register()
    pod = pod_run(node)

    async def body():
        agent = await greeted(token, node)
        assert (await agent.log(pod.pk, 0, b"line 1\nline"))["type"] == "ack"
        assert (await agent.log(pod.pk, 11, b" 2\n"))["type"] == "ack"
        await agent.close()
        # The agent reconnects and resends from an older offset: overlapping bytes.
        again = await greeted(token, node)
        assert (await again.log(pod.pk, 7, b"line 2\nline 3\n"))["type"] == "ack"
        gap = await again.log(pod.pk, 100, b"lost?")
        assert gap["code"] == protocol.ERR_OUT_OF_ORDER and "resend from 21" in gap["message"]
        await again.close()

    run(body)
    pod.refresh_from_db()
    stored = b"".join(bytes(c.data) for c in LogChunk.objects.filter(run=pod).order_by("offset"))
    assert stored == b"line 1\nline 2\nline 3\n"
    assert pod.log_size == len(stored)


def test_a_log_of_another_nodes_run_is_refused(register):
    node, token = register("gpu-a")
    other, _ = register("gpu-b")
    theirs = pod_run(other)

    async def body():
        agent = await greeted(token, node)
        refused = await agent.log(theirs.pk, 0, b"x")
        assert refused["code"] == protocol.ERR_UNKNOWN_RUN
        await agent.close()

    run(body)
    assert not LogChunk.objects.exists()


def test_group_messages_reach_the_agent_as_numbered_frames(register):
    node, token = register()

    async def body():
        agent = await greeted(token, node)  # the welcome was frame 1
        await database_sync_to_async(send_many)(
            [(node.pk, "signal", {"run": 7, "reason": "preempt", "grace_period": 30})]
        )
        signal = await agent.receive()
        assert signal["type"] == "signal" and signal["seq"] == 2 and signal["run"] == 7
        await agent.send("heartbeat")
        assert (await agent.receive())["seq"] == 3
        await agent.close()

    run(body)


def test_messages_for_several_nodes_go_out_together_each_nodes_in_order(register):
    """A reconcile hands its starts for every node to the channel layer in one call; each
    node's agent gets its own, in order."""
    node_a, token_a = register("gpu-a")
    node_b, token_b = register("gpu-b")

    def signal(run: int) -> dict:
        return {"run": run, "reason": "preempt", "grace_period": 30}

    async def body():
        a, b = await greeted(token_a, node_a), await greeted(token_b, node_b)
        await database_sync_to_async(send_many)(
            [(node_a.pk, "signal", signal(1)), (node_b.pk, "signal", signal(2)),
             (node_a.pk, "signal", signal(3))]
        )  # fmt: skip
        assert [(await a.receive())["run"] for _ in range(2)] == [1, 3]
        assert (await b.receive())["run"] == 2
        await a.close()
        await b.close()

    run(body)


def test_usage_reports_are_stored(register):
    node, token = register()
    pod = pod_run(node)

    async def body():
        agent = await greeted(token, node)
        await agent.send(
            "usage",
            at=timezone.now().isoformat(),
            gpus=[
                {
                    "index": 0,
                    "utilization": 87.5,
                    "memory_used_mib": 1024,
                    "memory_total_mib": 81559,
                },
            ],
            runs=[{"run": pod.pk, "cpu_percent": 120.0, "rss_mib": 2048}],
        )
        assert (await agent.receive())["type"] == "ack"
        await agent.close()

    run(body)
    assert GpuSample.objects.get(node=node).utilization == 87.5
    assert RunUsageSample.objects.get(run=pod).rss_mib == 2048


def test_acks_and_heartbeats_among_reports_do_not_split_their_batch(register):
    """An agent acknowledges every start it gets; in a burst those acks (and heartbeats)
    come between its reports. They are queued with the reports, so the reports that
    arrived while earlier ones were being stored are still stored together: one `ack`
    for all of them."""
    node, token = register()
    runs = []

    async def body():
        agent = await greeted(token, node)
        for i in range(3):
            runs.append(await database_sync_to_async(pod_run)(node, pod_index=i, epoch=i + 1))
        release = threading.Event()
        busy = asyncio.ensure_future(database_sync_to_async(release.wait)(10))
        try:
            seqs = []
            for pod in runs:
                seqs.append(await agent.send(
                    "run_state", run=pod.pk, epoch=pod.epoch, state="running",
                    exit_code=None, signal=None, reason=None, at=timezone.now().isoformat(),
                ))  # fmt: skip
                seqs.append(await agent.send("ack", ack=1))
            seqs.append(await agent.send("heartbeat"))
            await asyncio.sleep(0.2)  # all taken in while the first report waits
        finally:
            release.set()
            await busy
        acks = [(await agent.receive())["ack"]]
        while acks[-1] < seqs[-1]:
            acks.append((await agent.receive())["ack"])
        assert acks == [seqs[0], seqs[-1]]  # the first report alone, then all the rest
        await agent.close()

    run(body)
    assert set(PodRun.objects.filter(node=node).values_list("state", flat=True)) == {"running"}


def test_run_states_sent_back_to_back_are_all_stored_in_order_and_acknowledged(register):
    """run_state frames that arrive while earlier ones are being stored are stored
    together; the acks cover every one, and a later frame waits for them."""
    node, token = register()
    runs = []

    async def body():
        agent = await greeted(token, node)  # it has no runs yet: they come after
        for i in range(3):
            runs.append(await database_sync_to_async(pod_run)(node, pod_index=i, epoch=i + 1))
        last = 0
        for pod in runs:
            for state in ("running", "exited"):
                last = await agent.send(
                    "run_state", run=pod.pk, epoch=pod.epoch, state=state,
                    exit_code=0 if state == "exited" else None, signal=None, reason=None,
                    at=timezone.now().isoformat(),
                )  # fmt: skip
        log = await agent.send("log", run=runs[0].pk, offset=0, data="aGVsbG8K")
        acked = 0
        while acked < log:
            frame = await agent.receive()  # an ack, or a stop of a run nobody wants
            assert frame["ack"] >= acked
            acked = frame["ack"]
        assert acked == log > last
        await agent.close()

    run(body)
    states = dict(PodRun.objects.filter(node=node).values_list("pk", "state"))
    assert states == {pod.pk: "exited" for pod in runs}
    assert LogChunk.objects.filter(run=runs[0]).count() == 1
