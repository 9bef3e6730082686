"""Agent nodes that stop sending heartbeats (docs/agent.md, "Liveness"), checked by the
runtime tick:

- silent for AGENT_UNREACHABLE_AFTER seconds (default 15): `unreachable`: no new pods,
  its pods are kept (the agent may be back soon; its runs fence themselves meanwhile);
- silent for AGENT_LOST_AFTER seconds (default 60): `down`, through the node-down
  service (its workloads re-queued as a fault, restarts counted), its live runs `lost`;
- an unreachable node heard from again is `ready`.

A node never heard from counts as silent since it was registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce

from scheduler_core.choices import NodeState
from scheduler_core.models import Node, PodRun
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.runtime.executor import StopReason
from scheduler_core.services.cluster import (
    node_mark_down,
    node_mark_reachable,
    node_mark_unreachable,
)


def unreachable_after() -> float:
    return float(getattr(settings, "AGENT_UNREACHABLE_AFTER", 15))


def lost_after() -> float:
    return float(getattr(settings, "AGENT_LOST_AFTER", 60))


@dataclass
class LivenessReport:
    """Names of the agent nodes one check marked unreachable, down, or ready again."""

    unreachable: list[str] = field(default_factory=list)
    down: list[str] = field(default_factory=list)
    back: list[str] = field(default_factory=list)


def check_agent_nodes(now: datetime, *, backend: str) -> LivenessReport:
    """Mark silent nodes of `backend`'s pools unreachable or down, and heard-from ones
    ready again."""
    report = LivenessReport()
    nodes = (
        Node.objects.filter(pool__backend=backend)
        .exclude(state=NodeState.DOWN)
        .annotate(seen=Coalesce(F("last_heartbeat"), F("created_at")))
        .select_related("pool")
        .order_by("pk")
    )
    lost_cutoff = now - timedelta(seconds=lost_after())
    unreachable_cutoff = now - timedelta(seconds=unreachable_after())
    for node in nodes:
        if node.seen < lost_cutoff:
            node_lost(node=node, now=now)
            report.down.append(node.name)
        elif node.seen < unreachable_cutoff and node.state == NodeState.READY:
            node_mark_unreachable(node=node, reason=f"node {node.name} sent no heartbeat for "
                                  f"{unreachable_after():g} s; no new pods go there")  # fmt: skip
            report.unreachable.append(node.name)
        elif node.seen >= unreachable_cutoff and node.state == NodeState.UNREACHABLE:
            node_mark_reachable(node=node, reason=f"node {node.name} is back")
            report.back.append(node.name)
    return report


def node_lost(*, node: Node, now: datetime) -> None:
    """The node is down: its workloads re-queued as a fault, its live runs lost (its
    agent fenced them: lost_after is above the agents' fence_after plus grace)."""
    reason = f"node {node.name} sent no heartbeat for {lost_after():g} s"
    with transaction.atomic():
        node_mark_down(node=node, reason=reason, silent=True)
        PodRun.objects.filter(node=node, state__in=LIVE_RUN_STATES).update(
            state=PodRunState.LOST, stop_reason=StopReason.LOST, reason=reason, ended_at=now
        )
