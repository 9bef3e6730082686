"""Departments and projects are one queue-owner shape: the same services change either,
and quotas, queue states and usage samples name their owner the same way."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from scheduler_core.choices import EventType
from scheduler_core.models import QueueState, Quota, SchedulingEvent
from scheduler_core.services import org, quotas

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("owner", "by"), [("dept", "admin"), ("vision", "dept_admin")])
def test_one_update_service_changes_either_owner(cluster, owner, by):
    owner = cluster[owner]
    org.queue_owner_update(
        user=cluster[by], owner=owner, rank=3, over_quota_weight=2, description="x"
    )
    owner.refresh_from_db()
    assert (owner.rank, owner.over_quota_weight, owner.description) == (3, 2, "x")


def test_a_department_admin_describes_their_department_but_does_not_rank_it(cluster):
    """Rank and weight decide who gets over-quota GPUs among departments: raising one's own
    would take them from the others, so only system admins set them."""
    dept = cluster["dept"]
    for change in ({"rank": 1000}, {"over_quota_weight": 1e6}):
        with pytest.raises(PermissionDenied, match="only system admins change a department"):
            org.queue_owner_update(user=cluster["dept_admin"], owner=dept, **change)
    org.queue_owner_update(user=cluster["dept_admin"], owner=dept, description="vision and nlp")
    dept.refresh_from_db()
    assert (dept.rank, dept.over_quota_weight, dept.description) == (0, 1, "vision and nlp")
    assert not SchedulingEvent.objects.filter(type=EventType.RANK_WEIGHT_CHANGED).exists()


@pytest.mark.parametrize(("owner", "by"), [("dept", "admin"), ("nlp", "dept_admin")])
def test_rank_and_weight_changes_are_recorded_with_who_made_them(cluster, owner, by):
    owner = cluster[owner]
    org.queue_owner_update(user=cluster[by], owner=owner, rank=5, over_quota_weight=1)
    event = SchedulingEvent.objects.get(type=EventType.RANK_WEIGHT_CHANGED)
    name = cluster[by].username
    assert event.reason == f"{owner.kind} {owner}: rank 0 -> 5 by {name}"
    assert event.details == {
        "owner": owner.name,
        "owner_type": owner.kind,
        "changed_by": name,
        "rank": {"from": 0, "to": 5},
    }
    assert event.project == (owner if owner.kind == "project" else None)
    assert event.department == (owner if owner.kind == "department" else None)


def test_quota_changes_are_recorded_with_who_made_them(cluster):
    quotas.queue_owner_set_quota(
        user=cluster["dept_admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=2
    )
    event = SchedulingEvent.objects.get(type=EventType.QUOTA_CHANGED)
    assert event.details["changed_by"] == "dept-admin"
    assert event.reason.endswith("(set by dept-admin)")


@pytest.mark.parametrize("owner", ["other_dept", "infra"])
def test_only_managers_update_an_owner(cluster, owner):
    with pytest.raises(PermissionDenied, match=f"you do not manage {cluster[owner].kind}"):
        org.queue_owner_update(user=cluster["dept_admin"], owner=cluster[owner], rank=1)
    with pytest.raises(PermissionDenied):
        org.queue_owner_update(user=cluster["researcher"], owner=cluster["vision"], rank=1)


def test_quotas_are_set_from_the_level_above(cluster):
    """Department admins set their projects' quotas; only system admins set a department's."""
    quota = quotas.queue_owner_set_quota(
        user=cluster["dept_admin"], owner=cluster["nlp"], pool=cluster["pool"], gpus=2
    )
    assert quota.owner == cluster["nlp"] and quota.gpus == 2
    with pytest.raises(PermissionDenied, match="only system admins set department quotas"):
        quotas.queue_owner_set_quota(
            user=cluster["dept_admin"], owner=cluster["dept"], pool=cluster["pool"], gpus=1
        )
    quotas.queue_owner_set_quota(
        user=cluster["admin"], owner=cluster["dept"], pool=cluster["pool"], limit_gpus=16
    )
    quota = Quota.objects.for_owner(cluster["dept"]).get()
    assert (quota.gpus, quota.limit_gpus) == (12, 16)


def test_a_new_quota_starts_from_nothing(cluster):
    Quota.objects.for_owner(cluster["nlp"]).delete()
    quota = quotas.queue_owner_set_quota(
        user=cluster["admin"], owner=cluster["nlp"], pool=cluster["pool"], limit_gpus=3
    )
    assert (quota.gpus, quota.limit_gpus, quota.owner_kind) == (0, 3, "project")


@pytest.mark.parametrize(
    ("owner", "role", "other_kind_role"),
    [("dept", "admin", "researcher"), ("vision", "viewer", "admin")],
)
def test_members_of_either_owner(cluster, owner, role, other_kind_role):
    owner = cluster[owner]
    membership = org.queue_owner_set_member(
        user=cluster["admin"], owner=owner, username="outsider", role=role
    )
    assert membership.role == role and owner.memberships.filter(user__username="outsider").exists()
    with pytest.raises(ValidationError):
        org.queue_owner_set_member(
            user=cluster["admin"], owner=owner, username="outsider", role=other_kind_role
        )
    org.queue_owner_remove_member(user=cluster["admin"], owner=owner, username="outsider")
    assert not owner.memberships.filter(user__username="outsider").exists()


def test_department_members_are_set_by_system_admins_project_members_by_managers(cluster):
    with pytest.raises(PermissionDenied):
        org.queue_owner_set_member(
            user=cluster["dept_admin"], owner=cluster["dept"], username="outsider", role="viewer"
        )
    org.queue_owner_set_member(
        user=cluster["dept_admin"], owner=cluster["vision"], username="outsider", role="viewer"
    )
    with pytest.raises(PermissionDenied):
        org.queue_owner_remove_member(
            user=cluster["researcher"], owner=cluster["vision"], username="outsider"
        )


def test_owned_rows_name_their_owner_one_way(cluster):
    for owner in (cluster["dept"], cluster["vision"]):
        state = QueueState.objects.create(owner=owner, pool=cluster["pool"])
        assert state.owner == owner and state.owner_key == owner.owner_key
        assert list(QueueState.objects.for_owner(owner)) == [state]
    visible = {s.owner_key for s in QueueState.objects.visible_to(cluster["researcher"])}
    assert visible == {cluster["dept"].owner_key, cluster["vision"].owner_key}
    assert not QueueState.objects.visible_to(cluster["outsider"]).exists()
