"""The reads the console's pages need (scheduler_core/selectors added for the console):
what they return, and a constant number of queries whatever the cluster's size."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.live_events.recording import event_record
from scheduler_core.models import Allocation, SchedulingEvent
from scheduler_core.selectors.allocation_history import allocation_history
from scheduler_core.selectors.gpu_map import gpu_map
from scheduler_core.selectors.placement_preview import placement_preview
from scheduler_core.selectors.quota_table import quota_table
from scheduler_core.selectors.submittable import submittable_projects
from scheduler_core.workload_fit import PodAsk, gang_gpus
from tests import factories


def test_gpu_map_queries_do_not_grow_with_the_cluster(cluster, django_assert_num_queries):
    for i in range(5):
        w = factories.workload(cluster["vision"], f"w{i}", status=WorkloadStatus.RUNNING)
        Allocation.objects.create(
            workload=w, pod_index=0, node=cluster["nodes"][0], gpu_devices=[i], gpu_fraction=1.0
        )
    factories.running_workload(cluster["nlp"], cluster["nodes"][1:], name="big", gpus=2)
    with django_assert_num_queries(4):
        pools = gpu_map(user=cluster["researcher"])
    first, second = pools[0].nodes
    assert [d.used for d in first.devices[:6]] == [1, 1, 1, 1, 1, 0]
    assert [d.used for d in second.devices[:3]] == [1, 1, 0]
    assert pools[0].gpus_used == 7 and pools[0].gpus_free_ready == 9


def test_gpu_map_hides_names_of_projects_the_user_cannot_see(cluster):
    factories.running_workload(cluster["infra"], cluster["nodes"][:1], name="secret")
    cell = gpu_map(user=cluster["researcher"])[0].nodes[0].devices[0]
    assert cell.slices[0].project_name == "another project"
    assert cell.slices[0].workload_name == ""


def test_fractions_share_a_device(cluster):
    for name in ("a", "b"):
        w = factories.workload(cluster["vision"], name, gpus=0.5, status=WorkloadStatus.RUNNING)
        Allocation.objects.create(
            workload=w, pod_index=0, node=cluster["nodes"][0], gpu_devices=[0], gpu_fraction=0.5
        )
    cell = gpu_map(user=cluster["admin"])[0].nodes[0].devices[0]
    assert cell.used == 1 and len(cell.slices) == 2


def test_placement_preview(cluster):
    factories.running_workload(cluster["vision"], cluster["nodes"][:1], gpus=7)
    fit = placement_preview(
        user=cluster["researcher"],
        project=cluster["vision"],
        pools=[cluster["pool"]],
        groups=[PodAsk(gang=2, gpus=5)],
    )[0]
    assert fit.gang_gpus == 10 and fit.gpus_free == 9
    assert not fit.fits_now  # 1 + 8 free devices: only one pod of 5 fits
    assert fit.project_allocated_gpus == 7 and fit.quota_headroom == 1
    assert not fit.within_quota
    half = placement_preview(
        user=cluster["researcher"],
        project=cluster["vision"],
        pools=[cluster["pool"]],
        groups=[PodAsk(gang=2, gpus=0.5)],
    )[0]
    assert half.fits_now and half.nodes_used == ["gpu-1"]
    assert gang_gpus([PodAsk(gang=3, gpus=1.5)]) == 6


def test_quota_table_for_department_admins_is_their_department(cluster, django_assert_num_queries):
    with django_assert_num_queries(6):
        tables = quota_table(user=cluster["dept_admin"])
    names = [b.row.owner.name for b in tables[0].departments]
    assert names == ["research"]
    projects = {p.owner.name: p for p in tables[0].departments[0].projects}
    assert projects["vision"].gpus == 8 and projects["vision"].editable
    assert not tables[0].departments[0].row.editable
    assert quota_table(user=cluster["researcher"]) == []


def test_submittable_projects(cluster):
    assert list(submittable_projects(user=cluster["researcher"])) == [cluster["vision"]]
    assert set(submittable_projects(user=cluster["dept_admin"])) == {
        cluster["vision"],
        cluster["nlp"],
    }
    assert not submittable_projects(user=cluster["viewer"]).exists()


def test_allocation_history_replays_events(cluster, django_assert_num_queries):
    now = timezone.now()
    w = factories.running_workload(cluster["vision"], cluster["nodes"], gpus=2)
    for minutes_ago, kind in ((50, EventType.ALLOCATED), (20, EventType.PREEMPTED)):
        event = event_record(type=kind, workload=w, pool=cluster["pool"])
        SchedulingEvent.objects.filter(pk=event.pk).update(
            created_at=now - timedelta(minutes=minutes_ago)
        )
    with django_assert_num_queries(2):
        history = allocation_history(
            user=cluster["researcher"], now=now, window=timedelta(hours=1), points=7
        )
    assert history.series["vision"] == [0, 4, 4, 4, 0, 0, 0]
