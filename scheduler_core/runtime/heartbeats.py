"""Node heartbeats: a node silent for settings.NODE_HEARTBEAT_TIMEOUT seconds is marked
down (its workloads are evicted as a fault). With settings.SIMULATED_NODES the tick
refreshes every live node's heartbeat, so simulated nodes only go down when an admin says
so. Nodes of agent pools have heartbeats of their own (runtime.agent.liveness)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce

from scheduler_core.choices import Backend, NodeState
from scheduler_core.models import Node
from scheduler_core.services.cluster import node_mark_down


def refresh_simulated_heartbeats(now: datetime) -> int:
    """Simulated nodes report alive every tick (down ones stay down)."""
    return (
        Node.objects.exclude(state=NodeState.DOWN)
        .exclude(pool__backend=Backend.AGENT)
        .update(last_heartbeat=now)
    )


def mark_silent_nodes_down(now: datetime) -> list[Node]:
    """Mark down every live node silent for NODE_HEARTBEAT_TIMEOUT seconds."""
    timeout = settings.NODE_HEARTBEAT_TIMEOUT
    cutoff = now - timedelta(seconds=timeout)
    silent = (
        Node.objects.exclude(state=NodeState.DOWN)
        .exclude(pool__backend=Backend.AGENT)
        .annotate(seen=Coalesce(F("last_heartbeat"), F("created_at")))
        .filter(seen__lt=cutoff)
        .select_related("pool")
    )
    return [
        node_mark_down(node=node, reason=f"node {node.name} sent no heartbeat for {timeout:g} s")
        for node in silent
    ]
