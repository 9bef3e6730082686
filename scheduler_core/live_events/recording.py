"""Recording scheduling events and pushing them to browsers after commit.

Every change a user should see is written as a SchedulingEvent in the same transaction as
the change, and sent through the Channels layer only once that transaction commits, to the
groups `cluster`, `pool-<id>`, `project-<id>` and `workload-<id>` as
{"type": "scheduling.events", "group": <group>, "events": [<payload>, ...]} (one message per
group per commit; a workload's group only while someone listens). A change of someone's
memberships sends {"type": "access.changed"} to their group `user-<id>`, so that open
websockets re-check what that user may see, and signing out sends {"type":
"session.ended", "session": <digest of the session key>} there, so that the websockets of
that browser session close (console.consumers).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol

from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from scheduler_core.choices import PLACED_STATES, WorkloadStatus
from scheduler_core.db.locked_workload import LockedWorkload
from scheduler_core.live_events import publisher as event_publisher
from scheduler_core.live_events import watched_groups
from scheduler_core.models import (
    Department,
    DepartmentMembership,
    Node,
    NodePool,
    Project,
    ProjectMembership,
    SchedulingEvent,
    Workload,
)

logger = logging.getLogger(__name__)

CLUSTER_GROUP = watched_groups.CLUSTER_GROUP  # every event goes there (admins' pages)
EVENT_MESSAGE = "scheduling.event"
EVENTS_MESSAGE = "scheduling.events"
SEND_CONCURRENCY = 16


def group_name(kind: str, pk: int | str) -> str:
    """Channels group of one resource, e.g. `project-3`."""
    return f"{kind}-{pk}"


def user_group(user_id: int) -> str:
    """Private group of one user's open websockets (access changes)."""
    return group_name("user", user_id)


def workload_state(
    workload: Workload | LockedWorkload, nodes: list[str] | None = None
) -> dict[str, Any]:
    """The small, id-keyed state of a workload that lets a page update a row in place."""
    return {
        "id": workload.pk,
        "name": workload.name,
        "project_id": workload.project_id,
        "status": workload.status,
        "pods": len(nodes) if nodes is not None else None,
        "nodes": nodes,
        "reason": workload.pending_reason,
        "queue_position": workload.queue_position,
        "priority": workload.priority,
        "preemptions": workload.preemptions,
    }


class EventLike(Protocol):
    """What publishing reads of an event: a SchedulingEvent, or a row written in bulk
    (scheduler_core.live_events.batch.EventRow)."""

    pk: Any
    type: str
    created_at: datetime
    reason: str
    project_id: int | None
    department_id: int | None
    pool_id: int | None
    node_id: int | None
    workload_id: int | None
    details: dict[str, Any]


def event_payload(event: EventLike, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """What is pushed to browsers for one event."""
    return {
        "id": event.pk,
        "type": event.type,
        "at": event.created_at.isoformat(),
        "reason": event.reason,
        "project_id": event.project_id,
        "department_id": event.department_id,
        "pool_id": event.pool_id,
        "node_id": event.node_id,
        "workload_id": event.workload_id,
        "details": event.details,
        "workload": state,
    }


def event_groups(event: EventLike) -> list[str]:
    groups = [CLUSTER_GROUP]
    if event.pool_id:
        groups.append(group_name("pool", event.pool_id))
    if event.project_id:
        groups.append(group_name("project", event.project_id))
    if event.workload_id:
        groups.append(group_name("workload", event.workload_id))
    return groups


def event_record(
    *,
    type: str,
    workload: Workload | None = None,
    project: Project | None = None,
    department: Department | None = None,
    pool: NodePool | None = None,
    node: Node | None = None,
    reason: str = "",
    details: dict[str, Any] | None = None,
    at: datetime | None = None,
    state: dict[str, Any] | None = None,
) -> SchedulingEvent:
    """Write one event now and publish it after the surrounding transaction commits.
    `department` only for an event about a department itself (its own quota): only those
    who may see it see the event."""
    event = SchedulingEvent.objects.create(
        created_at=at or timezone.now(),
        type=type,
        workload=workload,
        project=project or (workload.project if workload is not None else None),
        department=department,
        pool=pool,
        node=node,
        reason=reason,
        details=details or {},
    )
    if state is None and workload is not None:
        state = workload_state(workload, nodes=_current_nodes(workload))
    publish_after_commit([(event, state)])
    return event


def _current_nodes(workload: Workload) -> list[str]:
    """Node of each placed pod (group by group), for events recorded without a state."""
    if workload.status not in (*PLACED_STATES, WorkloadStatus.SUSPENDED):
        return []
    return list(
        workload.allocations.order_by("group", "pod_index").values_list("node__name", flat=True)
    )


def publish_after_commit(items: Iterable[tuple[EventLike, dict[str, Any] | None]]) -> None:
    """Send events to their groups once the current transaction commits (never before);
    their payloads are built then, only for events some group of theirs has a listener for
    (scheduler_core.live_events.watched_groups)."""
    items = list(items)
    if items:
        transaction.on_commit(lambda: broadcast(items, send_events_now))


def send_events_now(items: list[tuple[EventLike, dict[str, Any] | None]]) -> None:
    """Push events to the groups of theirs someone listens to, in this thread."""
    routed = [(event_groups(event), event, state) for event, state in items]
    try:
        listened = watched_groups.listened({g for groups, _, _ in routed for g in groups})
    except Exception:  # the events are stored; browsers resync on reconnect
        logger.exception("could not publish %d events", len(items))
        return
    messages: list[tuple[str, dict[str, Any]]] = []
    for groups, event, state in routed:
        wanted = [g for g in groups if g in listened]
        if wanted:
            payload = event_payload(event, state)
            messages.extend(
                (g, {"type": EVENT_MESSAGE, "group": g, "event": payload}) for g in wanted
            )
    _send_to_groups(_merged_by_group(messages))


def send_after_commit(messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Send (group, message) pairs once the current transaction commits (at once outside one)."""
    if messages:
        transaction.on_commit(lambda: broadcast(messages))


def broadcast(items: list[Any], send: Callable[[list[Any]], None] | None = None) -> None:
    """Push messages through the channel layer with `send` (`send_now` unless said); a
    failure here never breaks a write.

    In a Celery worker and a web process they go to a background publisher thread, so the
    scheduling loop and the requests never wait on the channel layer
    (scheduler_core.live_events.publisher)."""
    send = send or send_now
    if event_publisher.enabled():
        event_publisher.publish(items, send)
    else:
        send(items)


def send_now(messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Push (group, message) pairs through the channel layer in this thread, each group's
    in order, to the groups someone listens to (watched_groups).

    A group's scheduling events go out as one `scheduling.events` message carrying them
    all in order (the consumer sends them on one by one): one channel-layer send costs
    about a third of a millisecond, and a busy cycle records thousands of events.
    """
    by_group = _merged_by_group(messages)
    try:
        for group in set(by_group) - watched_groups.listened(by_group):
            del by_group[group]
    except Exception:  # the event is stored; browsers resync on reconnect
        logger.exception("could not publish %d channel messages", len(messages))
        return
    _send_to_groups(by_group)


def _send_to_groups(by_group: dict[str, list[dict[str, Any]]]) -> None:
    """Send each group's messages in order, groups in parallel."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None or not by_group:
        return

    async def send_all() -> None:
        # Groups in parallel (a big cycle touches hundreds), each group's messages in order.
        import asyncio

        slots = asyncio.Semaphore(SEND_CONCURRENCY)

        async def send_group(group: str, items: list[dict[str, Any]]) -> None:
            async with slots:
                for message in items:
                    await layer.group_send(group, message)

        await asyncio.gather(*(send_group(g, items) for g, items in by_group.items()))

    loop = event_publisher.thread_loop()
    try:
        if loop is not None:  # the publisher thread: its loop keeps the layer's connections
            loop.run_until_complete(send_all())
        else:
            async_to_sync(send_all)()
    except Exception:  # the event is stored; browsers resync on reconnect
        logger.exception("could not publish to %d channel groups", len(by_group))


def _merged_by_group(messages: list[tuple[str, dict[str, Any]]]) -> dict[str, list[dict]]:
    """Each group's messages in order, runs of scheduling events merged into one message."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for group, message in messages:
        items = by_group.setdefault(group, [])
        if message.get("type") != EVENT_MESSAGE:
            items.append(message)
        elif items and items[-1].get("type") == EVENTS_MESSAGE:
            items[-1]["events"].append(message["event"])
        else:
            items.append({"type": EVENTS_MESSAGE, "group": group, "events": [message["event"]]})
    return by_group


@receiver(post_save, sender=ProjectMembership, dispatch_uid="events-access-project-save")
@receiver(post_delete, sender=ProjectMembership, dispatch_uid="events-access-project-delete")
@receiver(post_save, sender=DepartmentMembership, dispatch_uid="events-access-dept-save")
@receiver(post_delete, sender=DepartmentMembership, dispatch_uid="events-access-dept-delete")
def _membership_changed(sender, instance, **kwargs) -> None:
    """Tell the member's open websockets to re-check what they may see."""
    if instance.user_id:
        send_after_commit([(user_group(instance.user_id), {"type": "access.changed"})])


def session_digest(session_key: str) -> str:
    """Names a browser session in channel messages without sending its key around."""
    return hashlib.sha256(session_key.encode()).hexdigest()


@receiver(user_logged_out, dispatch_uid="events-session-ended")
def _signed_out(sender, request, user, **kwargs) -> None:
    """Close the websockets of the browser session that signs out (sent at once: the
    session is flushed right after this signal)."""
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if user is not None and session_key:
        message = {"type": "session.ended", "session": session_digest(session_key)}
        send_after_commit([(user_group(user.pk), message)])
