"""Departments and projects are one queue-owner shape: the same services change either,
and quotas, queue states and usage samples name their owner the same way."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from scheduler_core.models import QueueState, Quota
from scheduler_core.services import org, quotas

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("owner", ["dept", "vision"])
def test_one_update_service_changes_either_owner(cluster, owner):
    owner = cluster[owner]
    org.queue_owner_update(
        user=cluster["dept_admin"], owner=owner, rank=3, over_quota_weight=2, description="x"
    )
    owner.refresh_from_db()
    assert (owner.rank, owner.over_quota_weight, owner.description) == (3, 2, "x")


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
