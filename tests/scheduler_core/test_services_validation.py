"""Every validation rule of the services gives a clear error naming the field."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from scheduler_core.choices import Backend, NodeState, WorkloadKind, WorkloadStatus
from scheduler_core.models import Quota, SchedulingEvent, Workload
from scheduler_core.services import cluster as cluster_services
from scheduler_core.services import org, quotas
from scheduler_core.services.errors import Conflict
from scheduler_core.services.workloads import (
    WorkloadRequest,
    workload_cancel,
    workload_resume,
    workload_set_priority,
    workload_submit,
    workload_submit_bulk,
    workload_suspend,
)
from tests import factories

pytestmark = pytest.mark.django_db


def errors_of(exc_info) -> dict[str, list[str]]:
    return exc_info.value.message_dict


# --- quotas -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"gpus": -1}, "gpus", "must be 0 or more"),
        ({"cpu": -0.5}, "cpu", "must be 0 or more"),
        ({"memory": -2}, "memory", "must be 0 or more"),
        ({"gpus": 4, "limit_gpus": 2}, "limit_gpus", "must be at least the deserved quota (4)"),
        ({"cpu": 8, "limit_cpu": 4}, "limit_cpu", "at least the deserved quota (8)"),
        ({"memory": 64, "limit_memory": 32}, "limit_memory", "at least the deserved quota"),
        ({"limit_gpus": -3}, "limit_gpus", "must be 0 or more"),
        ({"gpus": "four"}, "gpus", "must be a number"),
    ],
)
def test_quota_rules(cluster, kwargs, field, text):
    with pytest.raises(ValidationError) as exc:
        quotas.queue_owner_set_quota(
            user=cluster["admin"], owner=cluster["vision"], pool=cluster["pool"], **kwargs
        )
    assert any(text in m for m in errors_of(exc)[field]), errors_of(exc)


def test_quota_limit_checked_against_existing_deserved(cluster):
    """Lowering only the limit below the stored deserved quota is refused too."""
    with pytest.raises(ValidationError) as exc:
        quotas.queue_owner_set_quota(
            user=cluster["admin"], owner=cluster["vision"], pool=cluster["pool"], limit_gpus=4
        )
    assert "limit_gpus" in errors_of(exc)


def test_quota_set_records_event_and_keeps_other_fields(cluster):
    quota = quotas.queue_owner_set_quota(
        user=cluster["dept_admin"],
        owner=cluster["vision"],
        pool=cluster["pool"],
        limit_gpus=12,
    )
    assert (quota.gpus, quota.limit_gpus) == (8, 12)
    assert SchedulingEvent.objects.filter(type="quota_changed", project=cluster["vision"]).exists()
    quota = quotas.queue_owner_set_quota(
        user=cluster["admin"], owner=cluster["vision"], pool=cluster["pool"], limit_gpus=None
    )
    assert quota.limit_gpus is None


def test_quota_permissions(cluster):
    with pytest.raises(PermissionDenied):
        quotas.queue_owner_set_quota(
            user=cluster["researcher"], owner=cluster["vision"], pool=cluster["pool"], gpus=1
        )
    with pytest.raises(PermissionDenied):
        quotas.queue_owner_set_quota(
            user=cluster["dept_admin"], owner=cluster["infra"], pool=cluster["pool"], gpus=1
        )
    with pytest.raises(PermissionDenied):
        quotas.queue_owner_set_quota(
            user=cluster["dept_admin"], owner=cluster["dept"], pool=cluster["pool"], gpus=1
        )
    quotas.queue_owner_set_quota(
        user=cluster["admin"], owner=cluster["dept"], pool=cluster["pool"], gpus=16
    )
    assert Quota.objects.get(department=cluster["dept"]).gpus == 16


def test_database_refuses_bad_quota_rows_too(cluster):
    """Constraints in the database back up the service checks."""
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.filter(project=cluster["vision"]).update(gpus=-1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.filter(project=cluster["vision"]).update(limit_gpus=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.create(pool=cluster["pool"], gpus=1)  # no owner


# --- names unique within scope -------------------------------------------------------------


def test_names_unique_within_scope(cluster):
    admin = cluster["admin"]
    with pytest.raises(ValidationError) as exc:
        org.department_create(user=admin, name="research")
    assert "already exists" in errors_of(exc)["name"][0]
    with pytest.raises(ValidationError) as exc:
        org.project_create(user=admin, department=cluster["dept"], name="vision")
    assert "already exists" in errors_of(exc)["name"][0]
    with pytest.raises(ValidationError) as exc:
        cluster_services.pool_create(user=admin, name="a100")
    assert "already exists" in errors_of(exc)["name"][0]
    with pytest.raises(ValidationError) as exc:
        cluster_services.node_create(user=admin, pool=cluster["pool"], name="gpu-1", gpu_count=8)
    assert "already exists" in errors_of(exc)["name"][0]
    request = WorkloadRequest(project=cluster["vision"], name="same", gpus=1)
    workload_submit(user=cluster["researcher"], request=request)
    with pytest.raises(ValidationError) as exc:
        workload_submit(user=cluster["researcher"], request=request)
    assert "already exists in project vision" in errors_of(exc)["name"][0]
    # the same workload name in another project is fine
    workload_submit(
        user=cluster["nlp_researcher"],
        request=WorkloadRequest(project=cluster["nlp"], name="same", gpus=1),
    )


@pytest.mark.parametrize("name", ["Vision", "has space", "", "ünïcode"])
def test_names_must_be_slugs(cluster, name):
    with pytest.raises(ValidationError) as exc:
        org.department_create(user=cluster["admin"], name=name)
    assert "lowercase letters" in errors_of(exc)["name"][0]


def test_weights_and_ranks(cluster):
    with pytest.raises(ValidationError) as exc:
        org.queue_owner_update(user=cluster["admin"], owner=cluster["vision"], over_quota_weight=-1)
    assert "over_quota_weight" in errors_of(exc)
    with pytest.raises(ValidationError) as exc:
        org.queue_owner_update(user=cluster["admin"], owner=cluster["dept"], rank="high")
    assert "rank" in errors_of(exc)


# --- workloads -----------------------------------------------------------------------------


def submit(cluster, **kwargs):
    kwargs.setdefault("name", "job")
    kwargs.setdefault("project", cluster["vision"])
    return workload_submit(user=cluster["researcher"], request=WorkloadRequest(**kwargs))


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"pods": 2, "min_pods": 3}, "min_pods", "must not exceed pods (2)"),
        ({"pods": 0}, "pods", "at least 1"),
        ({"gpus": -1}, "gpus", "must be 0 or more"),
        ({"cpu": -1}, "cpu", "must be 0 or more"),
        ({"gpus": 1.5}, "gpus", "fraction of one GPU"),
        ({"gpus": 9}, "gpus", "largest node in a100 has 8"),
        ({"cpu": 100}, "cpu", "largest node in a100 has 64"),
        ({"memory": 4096}, "memory", "largest node in a100 has 512"),
        ({"pods": 3, "gpus": 8}, "min_pods", "needs 24 GPUs at once"),
        ({"kind": "batch"}, "kind", "must be one of"),
        ({"weight": 0}, "weight", "above 0"),
        ({"spec": {"duration": -5}}, "spec.duration", "above 0"),
        ({"kind": "cpu", "gpus": 1}, "gpus", "CPU-only"),
        ({"name": ""}, "name", "required"),
    ],
)
def test_workload_rules(cluster, kwargs, field, text):
    with pytest.raises(ValidationError) as exc:
        submit(cluster, **kwargs)
    assert any(text in m for m in errors_of(exc).get(field, [])), errors_of(exc)
    assert not Workload.objects.exists()


def test_a_pod_must_fit_one_pool_in_every_resource_at_once(cluster):
    """16 GPUs fit a node of `big`, 100 cores one of a100: no pool holds the pod, as the
    submit form's preview says per pool (scheduler_core.workload_fit)."""
    big = factories.pool("big")
    factories.node(big, "big-1", gpu_count=16, cpu=32)
    factories.node(cluster["pool"], "a100-wide", gpu_count=8, cpu=128)
    with pytest.raises(ValidationError) as exc:
        submit(cluster, gpus=16, cpu=100, pools=[cluster["pool"], big])
    assert "in a100: a pod asks for 16 GPUs" in errors_of(exc)["gpus"][0]
    assert "in big: a pod asks for 100 CPU cores" in errors_of(exc)["cpu"][0]


def test_pod_no_larger_than_largest_node_of_its_pools(cluster):
    big = factories.pool("big")
    factories.node(big, "big-1", gpu_count=16)
    with pytest.raises(ValidationError) as exc:
        submit(cluster, gpus=16, pools=[cluster["pool"]])
    assert "largest node in a100" in errors_of(exc)["gpus"][0]
    assert submit(cluster, gpus=16, pools=[big]).total_gpus == 16


def test_a_fraction_of_a_gpu_is_refused_where_no_pool_shares_devices(cluster):
    """Slurm gives whole GPUs: half a GPU there would wait for a whole device that Fairway
    counted as shared. Refused with what to do; a pool that shares devices takes it."""
    slurm = factories.pool("hpc", backend=Backend.SLURM)
    factories.node(slurm, "hpc-1", gpu_count=8)
    with pytest.raises(ValidationError) as exc:
        submit(cluster, gpus=0.5, pools=[slurm])
    assert errors_of(exc)["gpus"] == [
        "a pod asks for 0.5 of a GPU but hpc gives whole GPUs only (pods run with Slurm): "
        "ask 1 GPU, or a pool of node agents"
    ]
    assert submit(cluster, name="whole", gpus=1, pools=[slurm]).total_gpus == 1
    shared = submit(cluster, name="half", gpus=0.5, pools=[slurm, cluster["pool"]])
    assert shared.total_gpus == 0.5


def test_multi_group_rules(cluster):
    with pytest.raises(ValidationError) as exc:
        submit(
            cluster,
            groups=[
                {"name": "w", "pods": 2, "min_pods": 5, "gpus": 1},
                {"name": "w", "pods": 1, "shoe": 1},
            ],
        )
    errors = errors_of(exc)
    assert "groups[0].min_pods" in errors
    assert "groups[1]" in errors and "shoe" in errors["groups[1]"][0]
    assert "groups[1].name" in errors


def test_submit_defaults_follow_kind(cluster):
    train = submit(cluster, name="t", gpus=1)
    assert (train.priority, train.preemptible, train.status) == (50, True, "pending")
    inter = submit(cluster, name="i", kind="interactive", gpus=0.5)
    assert (inter.priority, inter.preemptible) == (100, False)
    hi = submit(cluster, name="h", priority=120, gpus=1)
    assert hi.preemptible is False
    assert SchedulingEvent.objects.filter(type="submitted").count() == 3


def test_submit_to_other_project_is_refused(cluster):
    with pytest.raises(PermissionDenied):
        submit(cluster, project=cluster["nlp"])
    with pytest.raises(PermissionDenied):
        workload_submit(
            user=cluster["viewer"],
            request=WorkloadRequest(project=cluster["vision"], name="x", gpus=1),
        )


def test_bulk_submit_is_all_or_nothing(cluster):
    good = WorkloadRequest(project=cluster["vision"], name="ok", gpus=1)
    bad = WorkloadRequest(project=cluster["vision"], name="bad", gpus=1, pods=1, min_pods=2)
    with pytest.raises(ValidationError) as exc:
        workload_submit_bulk(user=cluster["researcher"], requests=[good, bad])
    assert "workloads[1].min_pods" in errors_of(exc)
    assert not Workload.objects.exists()
    dup = WorkloadRequest(project=cluster["vision"], name="ok", gpus=1)
    with pytest.raises(ValidationError) as exc:
        workload_submit_bulk(user=cluster["researcher"], requests=[good, dup])
    assert "workloads[1].name" in errors_of(exc)
    created = workload_submit_bulk(
        user=cluster["researcher"],
        requests=[good, WorkloadRequest(project=cluster["vision"], name="ok2", gpus=1)],
    )
    assert [w.name for w in created] == ["ok", "ok2"]


def test_a_bulk_submission_of_repeated_shapes_gives_each_workload_its_own_values(cluster):
    """Shapes are checked once per distinct shape: each workload still gets what its own
    request said, the kind's defaults and fields of its own."""
    vision, pool = cluster["vision"], cluster["pool"]

    def request(name, **shape):
        return WorkloadRequest(project=vision, name=name, pools=[pool], **shape)

    created = workload_submit_bulk(
        user=cluster["researcher"],
        requests=[
            request("a", gpus=1, spec={"duration": 5}),
            request("b", gpus=1, spec={"duration": 5}),
            request("c", gpus=1, spec={"duration": 9}, priority=80),
            request("d", gpus=2, pods=2, kind=WorkloadKind.INTERACTIVE),
        ],
    )
    created[0].spec["duration"] = 1  # a caller changing one leaves the others alone
    assert created[1].spec == {"duration": 5}
    stored = {w.name: w for w in Workload.objects.all()}
    assert stored["a"].spec == stored["b"].spec == {"duration": 5}
    assert (stored["c"].spec, stored["c"].priority) == ({"duration": 9}, 80)
    assert (stored["d"].pods, stored["d"].gpus, stored["d"].kind) == (2, 2, "interactive")
    assert stored["d"].priority != stored["a"].priority  # interactive's own default
    assert [list(w.candidate_pools.all()) for w in stored.values()] == [[pool]] * 4
    with pytest.raises(ValidationError) as exc:  # a known shape is not a pass for a bad name
        workload_submit_bulk(
            user=cluster["researcher"],
            requests=[request("e", gpus=1, spec={"duration": 5}), request("no way", gpus=1)],
        )
    assert list(errors_of(exc)) == ["workloads[1].name"]


def test_a_bulk_submission_reusing_a_name_is_refused_naming_that_workload(cluster):
    """Names are looked up only once the insert finds one taken: the answer still names
    the workload whose name is taken, keeps nothing, and says it beside bad input."""
    vision, researcher = cluster["vision"], cluster["researcher"]
    workload_submit(user=researcher, request=WorkloadRequest(project=vision, name="taken", gpus=1))
    with pytest.raises(Conflict) as exc:
        workload_submit_bulk(
            user=researcher,
            requests=[
                WorkloadRequest(project=vision, name="fresh", gpus=1),
                WorkloadRequest(project=vision, name="taken", gpus=1),
            ],
        )
    assert list(errors_of(exc)) == ["workloads[1].name"]
    assert (
        "a workload named 'taken' already exists in project vision"
        in errors_of(exc)["workloads[1].name"][0]
    )
    assert list(Workload.objects.values_list("name", flat=True)) == ["taken"]
    with pytest.raises(ValidationError) as exc:
        workload_submit_bulk(
            user=researcher,
            requests=[
                WorkloadRequest(project=vision, name="taken", gpus=1),
                WorkloadRequest(project=vision, name="bad", gpus=1, pods=1, min_pods=2),
            ],
        )
    assert not isinstance(exc.value, Conflict)  # bad input first
    assert set(errors_of(exc)) == {"workloads[0].name", "workloads[1].min_pods"}


def test_a_name_taken_by_a_concurrent_submission_is_a_conflict_and_nothing_is_kept(
    cluster, monkeypatch
):
    """Two submissions of one name that both pass the name check: the database's unique
    rule turns the second into a 409 naming the field, and none of its workloads stay."""
    from scheduler_core.services import workloads as workload_services

    workload_submit(
        user=cluster["researcher"],
        request=WorkloadRequest(project=cluster["vision"], name="taken", gpus=1),
    )
    monkeypatch.setattr(workload_services, "_existing_names", lambda requests: set())
    racing = [
        WorkloadRequest(project=cluster["vision"], name="fresh", gpus=1),
        WorkloadRequest(project=cluster["vision"], name="taken", gpus=1),
    ]
    with pytest.raises(Conflict) as exc:
        workload_submit_bulk(user=cluster["researcher"], requests=racing)
    assert "changed at this moment; submit it again" in errors_of(exc)["name"][0]
    assert sorted(Workload.objects.values_list("name", flat=True)) == ["taken"]


def test_workload_actions(cluster):
    job = submit(cluster, gpus=1)
    with pytest.raises(PermissionDenied):
        workload_cancel(user=cluster["nlp_researcher"], workload=job)
    job = workload_set_priority(user=cluster["researcher"], workload=job, priority=80)
    assert job.priority == 80 and job.version == 1
    with pytest.raises(ValidationError):
        workload_set_priority(user=cluster["researcher"], workload=job, priority="top")
    job = workload_suspend(user=cluster["researcher"], workload=job)
    assert job.status == WorkloadStatus.SUSPENDED
    with pytest.raises(ValidationError):
        workload_suspend(user=cluster["researcher"], workload=job)
    job = workload_resume(user=cluster["researcher"], workload=job)
    assert job.status == WorkloadStatus.PENDING
    job = workload_cancel(user=cluster["dept_admin"], workload=job)
    assert job.status == WorkloadStatus.CANCELLED
    with pytest.raises(ValidationError) as exc:
        workload_cancel(user=cluster["researcher"], workload=job)
    assert "already cancelled" in errors_of(exc)["status"][0]


# --- pools and nodes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool_settings", "field"),
    [
        ({"policy": "lottery"}, "policy"),
        ({"placement": "random"}, "placement"),
        ({"preemption": "yes"}, "preemption"),
        ({"min_guaranteed_runtime": -1}, "min_guaranteed_runtime"),
        ({"max_consolidation_evaluations": 1.5}, "max_consolidation_evaluations"),
        ({"fairshare_mode": "sometimes"}, "fairshare_mode"),
        ({"time_based_half_life": 0}, "time_based_half_life"),
        ({"colour": "blue"}, "colour"),
        ({"max_reclaims_per_cycle": 0}, "max_reclaims_per_cycle"),
        ({"max_preemptions_per_cycle": "lots"}, "max_preemptions_per_cycle"),
        ({"max_preemptions_per_workload": 0}, "max_preemptions_per_workload"),
    ],
)
def test_pool_settings_rules(cluster, pool_settings, field):
    with pytest.raises(ValidationError) as exc:
        cluster_services.pool_update(user=cluster["admin"], pool=cluster["pool"], **pool_settings)
    assert field in errors_of(exc)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gpu_count": -1}, "gpu_count"),
        ({"gpu_count": 2.5}, "gpu_count"),
        ({"cpu": -4}, "cpu"),
        ({"memory": -1}, "memory"),
        ({"labels": {"gpu": 3}}, "labels"),
    ],
)
def test_node_rules(cluster, kwargs, field):
    with pytest.raises(ValidationError) as exc:
        cluster_services.node_create(
            user=cluster["admin"], pool=cluster["pool"], name="n9", **kwargs
        )
    assert field in errors_of(exc)


def test_only_system_admins_manage_nodes(cluster):
    with pytest.raises(PermissionDenied):
        cluster_services.node_cordon(user=cluster["dept_admin"], node=cluster["nodes"][0])
    node = cluster_services.node_cordon(user=cluster["admin"], node=cluster["nodes"][0])
    assert node.state == NodeState.CORDONED


def test_node_down_evicts_with_backoff(cluster):
    node = cluster["nodes"][0]
    job = factories.running_workload(cluster["vision"], [node], backoff_limit=0)
    other = factories.running_workload(cluster["vision"], [node], backoff_limit=2)
    cluster_services.node_mark_down(node=node, reason="node gpu-1 missed its heartbeats")
    job.refresh_from_db()
    other.refresh_from_db()
    assert job.status == WorkloadStatus.FAILED
    assert (other.status, other.restarts) == (WorkloadStatus.PENDING, 1)
    assert not other.allocations.exists()
    reasons = list(
        SchedulingEvent.objects.filter(type="preempted").values_list("reason", flat=True)
    )
    assert reasons == ["node gpu-1 missed its heartbeats"] * 2


def test_drain_requeues_without_counting_a_restart(cluster):
    node = cluster["nodes"][0]
    job = factories.running_workload(cluster["vision"], [node], backoff_limit=0)
    cluster_services.node_drain(user=cluster["admin"], node=node)
    job.refresh_from_db()
    node.refresh_from_db()
    assert (job.status, job.restarts, node.state) == ("pending", 0, "cordoned")


def test_eviction_pacing_reaches_the_engine(cluster):
    """An admin may bound reclaims per cycle, or lift the bound, and the engine sees it."""
    from django.utils import timezone

    from scheduler_core.adapters import load_snapshot

    cluster_services.pool_update(
        user=cluster["admin"], pool=cluster["pool"], max_reclaims_per_cycle=5,
        max_preemptions_per_cycle=None,
    )  # fmt: skip
    (config,) = load_snapshot(timezone.now()).snapshot.pools
    assert (config.max_reclaims_per_cycle, config.max_preemptions_per_cycle) == (5, None)
