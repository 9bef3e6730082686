"""Heartbeats of simulated nodes: with settings.SIMULATED_NODES the tick refreshes
every live node of the simulator's pools, so they only go down when an admin says so;
a node of those pools silent for settings.NODE_HEARTBEAT_TIMEOUT seconds is marked down
(its workloads are evicted as a fault). Other executors keep their nodes' liveness
themselves (the agent: runtime.executors.agent.liveness)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce

from scheduler_core.choices import NodeState
from scheduler_core.models import Node
from scheduler_core.services.cluster import node_mark_down


def refresh_heartbeats(backend: str, now: datetime) -> int:
    """The live nodes of `backend`'s pools report alive (down ones stay down)."""
    return (
        Node.objects.filter(pool__backend=backend)
        .exclude(state=NodeState.DOWN)
        .update(last_heartbeat=now)
    )


def mark_silent_nodes_down(backend: str, now: datetime) -> list[Node]:
    """Mark down every live node of `backend`'s pools silent for NODE_HEARTBEAT_TIMEOUT
    seconds."""
    timeout = settings.NODE_HEARTBEAT_TIMEOUT
    cutoff = now - timedelta(seconds=timeout)
    silent = (
        Node.objects.filter(pool__backend=backend)
        .exclude(state=NodeState.DOWN)
        .annotate(seen=Coalesce(F("last_heartbeat"), F("created_at")))
        .filter(seen__lt=cutoff)
        .select_related("pool")
    )
    return [
        node_mark_down(node=node, reason=f"node {node.name} sent no heartbeat for {timeout:g} s")
        for node in silent
    ]
