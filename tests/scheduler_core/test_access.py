"""The one access rule: what each role sees, per model."""

import pytest

from scheduler_core import access
from scheduler_core.choices import EventType
from scheduler_core.models import (
    Department,
    Node,
    Project,
    Quota,
    SchedulingEvent,
    Workload,
)
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(cluster):
    vision_job = factories.workload(cluster["vision"], "vision-job")
    nlp_job = factories.workload(cluster["nlp"], "nlp-job")
    infra_job = factories.workload(cluster["infra"], "infra-job")
    for job in (vision_job, nlp_job, infra_job):
        SchedulingEvent.objects.create(
            created_at=job.submitted_at, type=EventType.SUBMITTED, workload=job, project=job.project
        )
    SchedulingEvent.objects.create(created_at=vision_job.submitted_at, type=EventType.NODE_STATE)
    return {**cluster, "jobs": {"vision": vision_job, "nlp": nlp_job, "infra": infra_job}}


def names(qs):
    return sorted(o.name for o in qs)


@pytest.mark.parametrize(
    ("who", "projects", "departments", "workloads"),
    [
        (
            "admin",
            ["infra", "nlp", "vision"],
            ["ops", "research"],
            ["infra-job", "nlp-job", "vision-job"],
        ),
        ("dept_admin", ["nlp", "vision"], ["research"], ["nlp-job", "vision-job"]),
        ("researcher", ["vision"], ["research"], ["vision-job"]),
        ("nlp_researcher", ["nlp"], ["research"], ["nlp-job"]),
        ("viewer", ["vision"], ["research"], ["vision-job"]),
        ("outsider", [], [], []),
    ],
)
def test_visible_to_per_role(world, who, projects, departments, workloads):
    user = world[who]
    assert names(Project.objects.visible_to(user)) == projects
    assert names(Department.objects.visible_to(user)) == departments
    assert names(Workload.objects.visible_to(user)) == workloads
    quota_owners = sorted(str(q.owner) for q in Quota.objects.visible_to(user))
    assert quota_owners == sorted(projects + departments)
    events = SchedulingEvent.objects.visible_to(user)
    assert sorted(e.workload.name for e in events if e.workload) == workloads
    # cluster-wide events (no project) are shown to every signed-in user
    assert events.filter(project__isnull=True).count() == 1


def test_anonymous_sees_nothing(world):
    from django.contrib.auth.models import AnonymousUser

    anon = AnonymousUser()
    assert not Project.objects.visible_to(anon).exists()
    assert not Workload.objects.visible_to(anon).exists()
    assert not Department.objects.visible_to(anon).exists()
    assert not SchedulingEvent.objects.visible_to(anon).exists()
    assert not Node.objects.visible_to(anon).exists()


def test_visible_to_has_no_duplicates_with_overlapping_memberships(world):
    """A user who is both department viewer and project member sees each row once."""
    from scheduler_core.choices import DepartmentRole
    from scheduler_core.models import DepartmentMembership

    DepartmentMembership.objects.create(
        department=world["dept"], user=world["researcher"], role=DepartmentRole.VIEWER
    )
    assert names(Workload.objects.visible_to(world["researcher"])) == ["nlp-job", "vision-job"]
    assert Project.objects.visible_to(world["researcher"]).count() == 2


def test_inactive_user_sees_nothing(world):
    user = world["researcher"]
    user.is_active = False
    user.save()
    assert not Workload.objects.visible_to(user).exists()


@pytest.mark.parametrize(
    ("who", "submit_vision", "manage_research", "manage_ops", "admin"),
    [
        ("admin", True, True, True, True),
        ("dept_admin", True, True, False, False),
        ("researcher", True, False, False, False),
        ("nlp_researcher", False, False, False, False),
        ("viewer", False, False, False, False),
        ("outsider", False, False, False, False),
    ],
)
def test_action_rules_per_role(world, who, submit_vision, manage_research, manage_ops, admin):
    user = world[who]
    assert access.can_submit_to(user, world["vision"]) is submit_vision
    assert access.can_manage_department(user, world["dept"]) is manage_research
    assert access.can_manage_department(user, world["other_dept"]) is manage_ops
    assert access.is_system_admin(user) is admin


def test_role_labels(world):
    assert access.user_role_label(world["admin"]) == "system admin"
    assert access.user_role_label(world["dept_admin"]) == "department admin"
    assert access.user_role_label(world["researcher"]) == "researcher"
    assert access.user_role_label(world["viewer"]) == "viewer"


@pytest.mark.parametrize(
    ("who", "queries", "allowed"),
    [("researcher", 1, True), ("dept_admin", 2, True), ("viewer", 2, False), ("admin", 0, True)],
)
def test_a_researcher_submitting_costs_one_query(
    world, who, queries, allowed, django_assert_num_queries
):
    """Researchers submit most: their right to is one query, asked first."""
    with django_assert_num_queries(queries):
        assert access.can_submit_to(world[who], world["vision"]) is allowed
