"""The console's websocket: who may connect, who may subscribe to what, what reaches them."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.db import connection, transaction

from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.live_events.recording import event_record
from scheduler_core.models import ProjectMembership
from tests import factories
from tests.live_events.sockets import TIMEOUT, browser_socket, connect, run, subscribe

# The consumer reads the database from its own sync threads, which must see committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


def record(**kwargs):
    """Record an event in a transaction that commits."""
    with transaction.atomic():
        return event_record(**kwargs)


def test_unauthenticated_connections_are_closed_with_4401(open_socket):
    async def body():
        ws = open_socket(AnonymousUser())
        connected, _ = await ws.connect(timeout=TIMEOUT)
        assert connected  # accepted first, so a browser sees the close code
        closing = await ws.receive_output(timeout=TIMEOUT)
        assert closing == {"type": "websocket.close", "code": 4401}

    run(body)


def test_inactive_users_are_closed_with_4401(cluster, open_socket):
    user = cluster["researcher"]
    user.is_active = False
    user.save()

    async def body():
        ws = open_socket(user)
        await ws.connect(timeout=TIMEOUT)
        assert (await ws.receive_output(timeout=TIMEOUT))["code"] == 4401

    run(body)


def test_a_logged_in_browser_session_connects_through_the_real_asgi_stack(cluster, client):
    client.force_login(cluster["researcher"])

    async def body():
        ws = await browser_socket(client)
        reply = await subscribe(ws, ["cluster", f"project-{cluster['vision'].pk}"])
        assert reply["type"] == "subscribed"
        assert reply["denied"] == []
        await ws.disconnect()

    run(body)


@pytest.mark.parametrize(
    ("role", "vision", "nlp", "infra"),
    [
        ("admin", True, True, True),
        ("dept_admin", True, True, False),
        ("researcher", True, False, False),
        ("viewer", True, False, False),
        ("outsider", False, False, False),
    ],
)
def test_project_and_workload_groups_follow_the_access_rule(
    cluster, open_socket, role, vision, nlp, infra
):
    workloads = {k: factories.workload(cluster[k], f"w-{k}") for k in ("vision", "nlp", "infra")}
    pool = cluster["pool"]
    expected = {"vision": vision, "nlp": nlp, "infra": infra}

    async def body():
        ws = await connect(open_socket, cluster[role])
        groups = ["cluster", f"pool-{pool.pk}"]
        for key in ("vision", "nlp", "infra"):
            groups += [f"project-{cluster[key].pk}", f"workload-{workloads[key].pk}"]
        reply = await subscribe(ws, groups)
        assert reply["type"] == "subscribed"
        accepted = {"cluster", f"pool-{pool.pk}"}
        for key, allowed in expected.items():
            if allowed:
                accepted |= {f"project-{cluster[key].pk}", f"workload-{workloads[key].pk}"}
        assert set(reply["groups"]) == accepted
        assert set(reply["denied"]) == set(groups) - accepted
        await ws.disconnect()

    run(body)


def test_unknown_groups_and_missing_objects_are_denied(cluster, open_socket):
    async def body():
        ws = await connect(open_socket, cluster["admin"])
        unknown = ["pool-99999", "project-99999", "workload-99999", "nodes", "project-x"]
        reply = await subscribe(ws, [*unknown, "user-1", "pool-²", "project-0", "cluster"])
        assert reply["groups"] == ["cluster"]
        assert len(reply["denied"]) == 8
        await ws.disconnect()

    run(body)


def test_an_event_reaches_a_subscribed_browser_after_commit(cluster, open_socket):
    workload = factories.running_workload(cluster["vision"], cluster["nodes"], name="train")

    async def body():
        ws = await connect(open_socket, cluster["researcher"])
        await subscribe(ws, [f"workload-{workload.pk}"])
        event = await database_sync_to_async(record)(
            type=EventType.ALLOCATED, workload=workload, pool=cluster["pool"], reason="started"
        )
        message = await ws.receive_json_from(timeout=TIMEOUT)
        assert message["type"] == "event"
        assert message["group"] == f"workload-{workload.pk}"
        payload = message["event"]
        assert payload["id"] == event.pk
        assert payload["type"] == "allocated"
        assert payload["reason"] == "started"
        assert payload["workload"]["id"] == workload.pk
        assert payload["workload"]["status"] == WorkloadStatus.RUNNING
        assert payload["workload"]["pods"] == 2
        assert payload["workload"]["nodes"] == ["gpu-1", "gpu-2"]
        assert "queue_position" in payload["workload"]
        assert payload["workload"]["preemptions"] == 0
        await ws.disconnect()

    run(body)


def record_elsewhere(**kwargs):
    """Record an event from a thread of its own (its own database connection)."""
    try:
        return record(**kwargs)
    finally:
        connection.close()


def test_an_event_reaches_a_browser_while_the_database_thread_is_busy(cluster, open_socket):
    """Database work of other connections (here a call that holds the process's database
    thread) does not hold up the live events of a page."""
    workload = factories.running_workload(cluster["vision"], cluster["nodes"], name="train")

    async def body():
        ws = await connect(open_socket, cluster["researcher"])
        await subscribe(ws, [f"workload-{workload.pk}"])
        release = threading.Event()
        busy = asyncio.ensure_future(database_sync_to_async(release.wait)(10))
        try:
            await sync_to_async(record_elsewhere, thread_sensitive=False)(
                type=EventType.ALLOCATED, workload=workload, pool=cluster["pool"],
                reason="started",
            )  # fmt: skip
            message = await ws.receive_json_from(timeout=2)
            assert message["type"] == "event" and message["event"]["reason"] == "started"
        finally:
            release.set()
            await busy
        await ws.disconnect()

    run(body)


def test_an_event_rolled_back_never_reaches_anyone(cluster, open_socket):
    workload = factories.workload(cluster["vision"], "ghost")

    def record_and_roll_back():
        try:
            with transaction.atomic():
                event_record(type=EventType.SUBMITTED, workload=workload)
                raise RuntimeError("the write failed")
        except RuntimeError:
            pass

    async def body():
        ws = await connect(open_socket, cluster["admin"])
        await subscribe(ws, ["cluster"])
        await database_sync_to_async(record_and_roll_back)()
        assert await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()

    run(body)


def test_cluster_subscribers_only_get_events_about_projects_they_may_see(cluster, open_socket):
    theirs = factories.workload(cluster["nlp"], "bobs-job")
    mine = factories.workload(cluster["vision"], "alices-job")

    async def body():
        alice = await connect(open_socket, cluster["researcher"])
        admin = await connect(open_socket, cluster["admin"])
        await subscribe(alice, ["cluster"])
        await subscribe(admin, ["cluster"])
        await database_sync_to_async(record)(type=EventType.SUBMITTED, workload=theirs)
        await database_sync_to_async(record)(type=EventType.SUBMITTED, workload=mine)
        await database_sync_to_async(record)(
            type=EventType.NODE_STATE, node=cluster["nodes"][0], reason="gpu-1 cordoned"
        )
        got = [await alice.receive_json_from(timeout=TIMEOUT) for _ in range(2)]
        assert [m["event"]["workload_id"] for m in got] == [mine.pk, None]
        assert got[1]["event"]["reason"] == "gpu-1 cordoned"
        assert await alice.receive_nothing(timeout=0.2)
        seen_by_admin = [await admin.receive_json_from(timeout=TIMEOUT) for _ in range(3)]
        assert [m["event"]["workload_id"] for m in seen_by_admin] == [theirs.pk, mine.pk, None]
        await alice.disconnect()
        await admin.disconnect()

    run(body)


def test_losing_a_membership_stops_events_at_once(cluster, open_socket):
    vision = cluster["vision"]
    workload = factories.workload(vision, "secret")

    def remove_alice():
        ProjectMembership.objects.filter(user=cluster["researcher"], project=vision).delete()

    async def body():
        ws = await connect(open_socket, cluster["researcher"])
        reply = await subscribe(ws, ["cluster", f"project-{vision.pk}"])
        assert len(reply["groups"]) == 2
        await database_sync_to_async(remove_alice)()
        dropped = await ws.receive_json_from(timeout=TIMEOUT)
        assert dropped == {
            "type": "unsubscribed",
            "groups": [f"project-{vision.pk}"],
            "reason": "access revoked",
        }
        await database_sync_to_async(record)(type=EventType.SUBMITTED, workload=workload)
        assert await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()

    run(body)


def test_unsubscribe_stops_a_group(cluster, open_socket):
    workload = factories.workload(cluster["vision"], "quiet")

    async def body():
        ws = await connect(open_socket, cluster["researcher"])
        await subscribe(ws, [f"workload-{workload.pk}"])
        reply = await subscribe(ws, [f"workload-{workload.pk}"], action="unsubscribe")
        assert reply == {"type": "unsubscribed", "groups": [f"workload-{workload.pk}"]}
        await database_sync_to_async(record)(type=EventType.SUBMITTED, workload=workload)
        assert await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()

    run(body)


@pytest.mark.parametrize(
    ("frame", "field", "words"),
    [
        ("not json", None, "not valid JSON"),
        (json.dumps(["subscribe"]), None, "JSON object"),
        (json.dumps({"action": "dance"}), "action", "unknown action"),
        (json.dumps({"action": "subscribe", "groups": "cluster"}), "groups", "list of group"),
        (json.dumps({"action": "subscribe", "groups": [3]}), "groups", "list of group"),
        (
            json.dumps(
                {
                    "action": "subscribe",
                    "groups": ["cluster"] * 2 + [f"pool-{i}" for i in range(1, 600)],
                }
            ),
            "groups",
            "at most",
        ),
    ],
)
def test_bad_messages_get_an_error_frame_and_the_connection_stays(
    cluster, open_socket, frame, field, words
):
    async def body():
        ws = await connect(open_socket, cluster["researcher"])
        await ws.send_to(text_data=frame)
        error = await ws.receive_json_from(timeout=TIMEOUT)
        assert error["type"] == "error"
        assert words in error["message"]
        assert error.get("field") == field
        await ws.send_json_to({"action": "ping"})
        assert await ws.receive_json_from(timeout=TIMEOUT) == {"type": "pong"}
        await ws.disconnect()

    run(body)


def test_binary_frames_get_an_error_frame(cluster, open_socket):
    async def body():
        ws = await connect(open_socket, cluster["researcher"])
        await ws.send_to(bytes_data=b"\x00\x01")
        error = await ws.receive_json_from(timeout=TIMEOUT)
        assert error["type"] == "error"
        assert "text frames" in error["message"]
        await ws.disconnect()

    run(body)


def _record_many(workload, types):
    """Several events written and published together, as a cycle does."""
    from django.utils import timezone

    from scheduler_core.live_events.batch import EventBatch

    with transaction.atomic():
        batch = EventBatch(timezone.now())
        for t in types:
            batch.add(type=t, workload=workload, reason=t, nodes=[])
        batch.flush()


def test_a_commits_events_travel_as_one_message_and_reach_the_browser_one_by_one(
    cluster, open_socket
):
    from channels.layers import get_channel_layer

    workload = factories.workload(cluster["vision"], "busy")
    group = f"project-{cluster['vision'].pk}"
    types = [EventType.SUBMITTED, EventType.PENDING_REASON, EventType.PRIORITY_CHANGED]

    async def body():
        layer = get_channel_layer()
        raw = await layer.new_channel()
        await layer.group_add(group, raw)
        ws = await connect(open_socket, cluster["researcher"])
        await subscribe(ws, [group])
        await database_sync_to_async(_record_many)(workload, types)
        message = await layer.receive(raw)
        assert message["type"] == "scheduling.events"
        assert [e["type"] for e in message["events"]] == types
        frames = [await ws.receive_json_from(timeout=TIMEOUT) for _ in types]
        assert [f["event"]["type"] for f in frames] == types
        assert {f["group"] for f in frames} == {group}
        await ws.disconnect()

    run(body)


@pytest.mark.parametrize("kind", ["workload", "project", "cluster"])
def test_an_event_group_is_sent_to_only_while_a_browser_listens(
    cluster, open_socket, settings, kind
):
    import uuid

    from channels.layers import get_channel_layer

    from scheduler_core.live_events.watched_groups import listened

    settings.SCHEDULER_KEY_PREFIX = f"fairway-test-{uuid.uuid4().hex[:8]}"
    workload = factories.workload(cluster["vision"], "watched")
    group = {
        "workload": f"workload-{workload.pk}",
        "project": f"project-{cluster['vision'].pk}",
        "cluster": "cluster",
    }[kind]

    async def body():
        layer = get_channel_layer()
        raw = await layer.new_channel()
        await layer.group_add(group, raw)  # in the group, but not through the console
        await database_sync_to_async(record)(type=EventType.SUBMITTED, workload=workload)
        assert await database_sync_to_async(listened)([group, "cluster", "user-3"]) == {"user-3"}

        ws = await connect(open_socket, cluster["admin" if kind == "cluster" else "researcher"])
        await subscribe(ws, [group])
        assert await database_sync_to_async(listened)([group]) == {group}
        await database_sync_to_async(record)(type=EventType.PRIORITY_CHANGED, workload=workload)
        frame = await ws.receive_json_from(timeout=TIMEOUT)
        assert frame["event"]["type"] == EventType.PRIORITY_CHANGED
        message = await layer.receive(raw)  # the first event never went out
        assert [e["type"] for e in message["events"]] == [EventType.PRIORITY_CHANGED]

        await subscribe(ws, [group], action="unsubscribe")
        assert await database_sync_to_async(listened)([group]) == set()
        await ws.disconnect()

    run(body)
