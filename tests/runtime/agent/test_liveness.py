"""Agent nodes that stop sending heartbeats: unreachable (no new pods), then down (pods
re-queued as a fault, runs lost); back to ready when heard from again."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.models import Node
from scheduler_core.models.agents import PodRunState
from scheduler_core.runtime.tick import tick
from tests.runtime.agent.conftest import runs_of


def _silent(node: Node, seconds: float) -> None:
    Node.objects.filter(pk=node.pk).update(
        last_heartbeat=timezone.now() - timedelta(seconds=seconds)
    )


def _state(node: Node) -> str:
    return Node.objects.get(pk=node.pk).state


def test_a_silent_node_is_unreachable_then_down(agents, submit, agent_cluster, settings):
    settings.AGENT_UNREACHABLE_AFTER = 15
    settings.AGENT_LOST_AFTER = 60
    w = submit("long", gpus=4)
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "running")
    node = run.node

    _silent(node, 20)
    agents.settle(tick)
    assert _state(node) == NodeState.UNREACHABLE
    w.refresh_from_db()
    assert w.status == WorkloadStatus.RUNNING  # its pods are kept
    others = [n for n in agent_cluster["nodes"] if n.pk != node.pk]
    for other in others:
        _silent(other, 20)
    agents.settle(tick)
    newcomer = submit("newcomer", gpus=1)
    agents.cycle()
    newcomer.refresh_from_db()
    assert newcomer.status == WorkloadStatus.PENDING  # no new pods on unreachable nodes

    _silent(node, 61)
    agents.settle(tick)
    assert _state(node) == NodeState.DOWN
    w.refresh_from_db()
    assert w.status == WorkloadStatus.PENDING and w.restarts == 1
    run.refresh_from_db()
    assert run.state == PodRunState.LOST and run.stop_reason == "lost"


def test_an_unreachable_node_heard_from_again_is_ready(agents, agent_cluster):
    node = agent_cluster["nodes"][0]
    _silent(node, 20)
    agents.settle(tick)
    assert _state(node) == NodeState.UNREACHABLE
    _silent(node, 0)
    agents.settle(tick)
    assert _state(node) == NodeState.READY


def test_a_node_never_heard_from_counts_as_silent_since_it_registered(agents, agent_cluster):
    node = agent_cluster["nodes"][0]
    Node.objects.filter(pk=node.pk).update(
        last_heartbeat=None, created_at=timezone.now() - timedelta(seconds=120)
    )
    agents.settle(tick)
    assert _state(node) == NodeState.DOWN
