"""Recording scheduling events and pushing them to browsers after commit.

Every change a user should see is written as a SchedulingEvent in the same transaction as
the change, and sent through the Channels layer only once that transaction commits, to the
groups `cluster`, `pool-<id>`, `project-<id>` and `workload-<id>`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from scheduler_core.models import Node, NodePool, Project, SchedulingEvent, Workload

logger = logging.getLogger(__name__)

CLUSTER_GROUP = "cluster"


def group_name(kind: str, pk: int | str) -> str:
    """Channels group of one resource, e.g. `project-3`."""
    return f"{kind}-{pk}"


def workload_state(workload: Workload, nodes: list[str] | None = None) -> dict[str, Any]:
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
    }


def event_payload(event: SchedulingEvent, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """What is pushed to browsers for one event."""
    return {
        "id": event.pk,
        "type": event.type,
        "at": event.created_at.isoformat(),
        "reason": event.reason,
        "project_id": event.project_id,
        "pool_id": event.pool_id,
        "node_id": event.node_id,
        "workload_id": event.workload_id,
        "details": event.details,
        "workload": state,
    }


def event_groups(event: SchedulingEvent) -> list[str]:
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
    pool: NodePool | None = None,
    node: Node | None = None,
    reason: str = "",
    details: dict[str, Any] | None = None,
    at: datetime | None = None,
    state: dict[str, Any] | None = None,
) -> SchedulingEvent:
    """Write one event now and publish it after the surrounding transaction commits."""
    event = SchedulingEvent.objects.create(
        created_at=at or timezone.now(),
        type=type,
        workload=workload,
        project=project or (workload.project if workload is not None else None),
        pool=pool,
        node=node,
        reason=reason,
        details=details or {},
    )
    if state is None and workload is not None:
        state = workload_state(workload)
    publish_after_commit([(event, state)])
    return event


def publish_after_commit(items: Iterable[tuple[SchedulingEvent, dict[str, Any] | None]]) -> None:
    """Send events to their groups once the current transaction commits (never before)."""
    messages = [(event_groups(e), event_payload(e, s)) for e, s in items]
    if messages:
        transaction.on_commit(lambda: broadcast(messages))


def broadcast(messages: list[tuple[list[str], dict[str, Any]]]) -> None:
    """Push payloads through the channel layer; a failure here never breaks a write."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return

    async def send_all() -> None:
        for groups, payload in messages:
            for group in groups:
                await layer.group_send(group, {"type": "scheduling.event", "event": payload})

    try:
        async_to_sync(send_all)()
    except Exception:  # the event is stored; browsers resync on reconnect
        logger.exception("could not publish %d scheduling events", len(messages))
