"""The snapshot adapter: the database as the engine sees it, in constant queries."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_core.adapters import load_snapshot
from scheduler_core.adapters.snapshot import SnapshotMemo
from scheduler_core.choices import FairshareMode, NodeState
from scheduler_core.models import UsageSample, WorkloadCandidatePool
from tests import factories

pytestmark = pytest.mark.django_db


def _populate(cluster, n: int) -> None:
    for i in range(n):
        w = factories.workload(cluster["vision"], f"pending-{i}", node_selector={"zone": "a"})
        WorkloadCandidatePool.objects.create(workload=w, pool=cluster["pool"])
        factories.running_workload(cluster["nlp"], [cluster["nodes"][i % 2]], name=f"run-{i}")


def test_snapshot_takes_the_same_number_of_queries_for_any_cluster_size(
    cluster, django_assert_num_queries
):
    cluster["pool"].fairshare_mode = FairshareMode.TIME_BASED
    cluster["pool"].save()
    _populate(cluster, 2)
    with django_assert_num_queries(11):
        small = load_snapshot(timezone.now())
    _populate_more = [factories.node(cluster["pool"], f"extra-{i}") for i in range(5)]
    assert _populate_more
    for i in range(2, 8):
        w = factories.workload(cluster["infra"], f"more-{i}")
        WorkloadCandidatePool.objects.create(workload=w, pool=cluster["pool"])
    with django_assert_num_queries(11):
        big = load_snapshot(timezone.now())
    assert len(big.snapshot.workloads) > len(small.snapshot.workloads)
    assert len(big.snapshot.nodes) == 7


def test_snapshot_maps_quotas_limits_nodes_and_placements(cluster):
    dept = cluster["dept"]
    quota = dept.quotas.get()
    quota.limit_gpus = 14
    quota.save()
    cluster["nodes"][1].state = NodeState.CORDONED
    cluster["nodes"][1].save()
    running = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=2)
    elastic = factories.workload(
        cluster["nlp"],
        "gang",
        groups=[
            {"name": "ps", "pods": 1, "min_pods": 1, "gpus": 0, "cpu": 4, "memory": 8},
            {"name": "worker", "pods": 4, "min_pods": 2, "gpus": 1, "cpu": 8, "memory": 32},
        ],
        backoff_limit=2,
    )
    live = load_snapshot(timezone.now())
    snap = live.snapshot

    queues = {q.name: q for q in snap.queues}
    assert queues["research"].parent is None
    assert queues["research"].quota["a100"].gpus == 12
    assert queues["research"].limit["a100"].gpus == 14
    assert math.isinf(queues["research"].quota["a100"].cpu)  # a CPU quota of 0: not governed
    assert queues["vision"].parent == "research"
    assert math.isinf(queues["vision"].limit["a100"].gpus)

    nodes = {n.name: n for n in snap.nodes}
    assert nodes["gpu-2"].state == "cordoned"
    assert nodes["gpu-1"].gpus == 8 and nodes["gpu-1"].pool == "a100"

    specs = {w.id: w for w in snap.workloads}
    run = specs[str(running.pk)]
    assert run.status == "running" and run.pool == "a100"
    assert [(p.node, p.devices) for p in run.pods] == [("gpu-1", (0, 1))]
    assert run.started_at == pytest.approx(running.started_at.timestamp())
    gang = specs[str(elastic.pk)]
    assert [(g.name, g.pods, g.min_pods, g.request.gpus) for g in gang.groups] == [
        ("ps", 1, 1, 0.0),
        ("worker", 4, 2, 1.0),
    ]
    assert gang.backoff_limit == 2 and gang.pods == ()
    assert live.workloads[elastic.pk].version == elastic.version


def test_snapshot_feeds_usage_within_the_pools_window(cluster):
    pool = cluster["pool"]
    pool.fairshare_mode = FairshareMode.TIME_BASED
    pool.time_based_window = 3600
    pool.save()
    now = timezone.now()
    for age in (600, 7200):
        UsageSample.objects.create(
            pool=pool,
            project=cluster["vision"],
            interval_start=now - timedelta(seconds=age + 60),
            interval_end=now - timedelta(seconds=age),
            gpu_seconds=480,
        )
    UsageSample.objects.create(
        pool=pool, department=cluster["dept"], interval_start=now - timedelta(seconds=660),
        interval_end=now - timedelta(seconds=600), gpu_seconds=480,
    )  # fmt: skip
    usage = load_snapshot(now).snapshot.usage
    assert [(u.queue, u.pool, u.gpu_seconds) for u in usage] == [("vision", "a100", 480)]


def test_a_department_named_like_a_project_keeps_a_distinct_queue(cluster):
    factories.department("vision")
    names = [q.name for q in load_snapshot(timezone.now()).snapshot.queues]
    assert "vision" in names and "vision (department)" in names


def _spec(live, workload):
    return next(s for s in live.snapshot.workloads if s.id == str(workload.pk))


@pytest.fixture
def memo():
    """The memo a scheduling loop keeps between its cycles."""
    return SnapshotMemo()


def test_any_saved_change_is_seen_by_the_next_snapshot_of_a_kept_memo(cluster, memo):
    """Every writer goes through the version (services, the admin, scripts that save)."""
    waiting = factories.workload(cluster["vision"], "waiting", priority=10)
    load_snapshot(timezone.now(), memo)
    waiting.priority = 70
    waiting.save()
    assert _spec(load_snapshot(timezone.now(), memo), waiting).priority == 70


def test_known_workloads_are_not_read_again_until_their_version_changes(
    cluster, memo, django_assert_num_queries
):
    from scheduler_core.services.workloads import workload_set_priority

    waiting = factories.workload(cluster["vision"], "waiting", priority=10)
    load_snapshot(timezone.now(), memo)  # learns the workload
    with django_assert_num_queries(6):  # no usage, no pods to read, no static reads
        again = load_snapshot(timezone.now(), memo)
    assert _spec(again, waiting).priority == 10

    workload_set_priority(user=cluster["admin"], workload=waiting, priority=90)
    with django_assert_num_queries(8):  # its new version is read again
        changed = load_snapshot(timezone.now(), memo)
    assert _spec(changed, waiting).priority == 90


def test_known_nodes_are_read_again_only_when_they_change(cluster, memo, django_assert_num_queries):
    """A kept memo reads the nodes' versions only; a node changed since (its labels, its
    state, its pool) is read again and seen, and a deleted one is gone."""
    from scheduler_core.services.cluster import node_cordon

    load_snapshot(timezone.now(), memo)  # learns the nodes
    with django_assert_num_queries(6):
        load_snapshot(timezone.now(), memo)
    first, second = cluster["nodes"][:2]
    first.labels = {"zone": "b"}
    first.save()
    node_cordon(user=cluster["admin"], node=second)
    with django_assert_num_queries(7):  # the two changed nodes, in one query
        changed = load_snapshot(timezone.now(), memo)
    nodes = {n.name: n for n in changed.snapshot.nodes}
    assert nodes[first.name].labels == {"zone": "b", "containers": "true"}
    assert nodes[second.name].state == NodeState.CORDONED
    assert changed.node_versions[first.pk] == first.version
    first.delete()
    assert first.name not in {n.name for n in load_snapshot(timezone.now(), memo).snapshot.nodes}


def test_renaming_a_project_renames_the_queue_of_its_known_workloads(cluster, memo):
    waiting = factories.workload(cluster["vision"], "waiting")
    assert _spec(load_snapshot(timezone.now(), memo), waiting).project == "vision"
    cluster["vision"].name = "sight"
    cluster["vision"].save()
    assert _spec(load_snapshot(timezone.now(), memo), waiting).project == "sight"


def test_workloads_that_finish_leave_the_memo(cluster, memo):
    from scheduler_core.choices import WorkloadStatus
    from scheduler_core.models import Workload

    done = factories.workload(cluster["vision"], "done")
    load_snapshot(timezone.now(), memo)
    assert done.pk in memo.static
    Workload.objects.filter(pk=done.pk).update(status=WorkloadStatus.CANCELLED, version=9)
    live = load_snapshot(timezone.now(), memo)
    assert done.pk not in memo.static and done.pk not in memo.specs
    assert done.pk not in live.workloads


def test_a_waiting_workload_is_rebuilt_only_when_its_row_changes(cluster, memo):
    from scheduler_core.models import Workload

    waiting = factories.workload(cluster["vision"], "waiting")
    first = load_snapshot(timezone.now(), memo)
    again = load_snapshot(timezone.now(), memo)
    assert again.workloads[waiting.pk] is first.workloads[waiting.pk]
    assert _spec(again, waiting) is _spec(first, waiting)

    Workload.objects.filter(pk=waiting.pk).update(pending_reason="new reason", queue_position=4)
    moved = load_snapshot(timezone.now(), memo)
    row = moved.workloads[waiting.pk]
    assert (row.pending_reason, row.queue_position) == ("new reason", 4)
    assert row is not again.workloads[waiting.pk]

    Workload.objects.filter(pk=waiting.pk).update(status="cancelled")
    assert waiting.pk not in load_snapshot(timezone.now(), memo).workloads
