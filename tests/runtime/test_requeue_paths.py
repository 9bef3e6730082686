"""Every path that stops a run early agrees (engine.transitions): the engine's own fault
handling in a cycle, a node marked down or drained through the services, and a failed run
an executor reports count restarts the same way, keep the workload's last checkpoint and
leave the same kind of pending reason."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_core.choices import EventType, NodeState, WorkloadStatus
from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Node, SchedulingEvent, Workload
from scheduler_core.services.cluster import node_drain, node_mark_down
from tests import factories

pytestmark = pytest.mark.django_db


def _engine_fault(cluster, node):
    """The engine sees the node down (as in a what-if or a seed) and evicts as a fault."""
    Node.objects.filter(pk=node.pk).update(state=NodeState.DOWN)
    run_cycle()


def _service_fault(cluster, node):
    node_mark_down(node=node, reason=f"node {node.name} sent no heartbeat for 60 s")


def _drain(cluster, node):
    node_drain(user=cluster["admin"], node=node)


PATHS = {"engine fault": _engine_fault, "node down": _service_fault, "drain": _drain}

CASES = [
    # path, restarts before, backoff limit -> status, restarts after, kind of its event
    ("engine fault", 0, 1, WorkloadStatus.PENDING, 1, "fault"),
    ("node down", 0, 1, WorkloadStatus.PENDING, 1, "fault"),
    ("engine fault", 1, 1, WorkloadStatus.FAILED, 1, "fault"),
    ("node down", 1, 1, WorkloadStatus.FAILED, 1, "fault"),
    ("engine fault", 7, None, WorkloadStatus.PENDING, 8, "fault"),
    ("node down", 7, None, WorkloadStatus.PENDING, 8, "fault"),
    ("drain", 1, 1, WorkloadStatus.PENDING, 1, "drain"),
]


@pytest.mark.parametrize(("path", "restarts", "limit", "status", "after", "kind"), CASES)
def test_every_path_that_stops_a_run_follows_one_rule(
    cluster, path, restarts, limit, status, after, kind
):
    node, other = cluster["nodes"]
    Node.objects.filter(pk=other.pk).update(state=NodeState.CORDONED)  # nowhere else to go
    w = factories.running_workload(
        cluster["vision"], [node], name="ckpt", gpus=2, backoff_limit=limit, restarts=restarts,
        spec={"duration": 600, "checkpoint_every": 20},
    )  # fmt: skip
    Workload.objects.filter(pk=w.pk).update(started_at=timezone.now() - timedelta(seconds=55))
    PATHS[path](cluster, node)
    w.refresh_from_db()
    assert (w.status, w.restarts, w.preemptions) == (status, after, 0)
    assert w.progress_seconds == 40  # its last checkpoint, whoever stopped it
    assert not w.allocations.exists() and w.started_at is None
    stopped = SchedulingEvent.objects.get(workload=w, type=EventType.PREEMPTED)
    assert stopped.details["kind"] == kind
    if status == WorkloadStatus.PENDING:
        assert w.pending_reason  # re-queued with a reason (a cycle may have explained it anew)
    else:
        failed = SchedulingEvent.objects.get(workload=w, type=EventType.FAILED)
        assert f"restarted once, backoff limit {limit} used up" in failed.reason
