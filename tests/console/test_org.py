"""Departments, projects and their members in the console: each role sees and changes what
the API lets it, and nothing more."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from scheduler_core.choices import ProjectRole, WorkloadStatus
from scheduler_core.models import Department, Project, ProjectMembership, Workload
from tests import factories


def owner_url(name, owner, kind=None):
    return reverse(f"console:{name}", args=[kind or owner.kind, owner.pk])


def new_owner(prefix: str, **values) -> dict:
    """What a create form of the organisation page posts (prefix: project or department)."""
    return {
        f"{prefix}-{key}": value
        for key, value in {"rank": 0, "over_quota_weight": 1, **values}.items()
    }


def form_of(html: str, form_id: str) -> str:
    return html.split(f'id="{form_id}"', 1)[1].split("</form>", 1)[0]


@pytest.mark.parametrize(
    ("role", "shown", "hidden"),
    [
        ("admin", ["research", "ops", "vision", "nlp", "infra"], []),
        ("dept_admin", ["research", "vision", "nlp"], ["ops", "infra"]),
        ("researcher", ["research", "vision"], ["ops", "nlp", "infra"]),
        ("outsider", [], ["research", "vision"]),
    ],
)
def test_the_organisation_page_lists_what_the_role_may_see(
    client_for, cluster, role, shown, hidden
):
    html = client_for(role).get(reverse("console:org")).content.decode()
    for name in shown:
        assert f'data-department="{name}"' in html or f'data-project="{name}"' in html
    for name in hidden:
        assert f'data-department="{name}"' not in html and f'data-project="{name}"' not in html


@pytest.mark.parametrize(
    ("role", "forms"),
    [
        ("admin", {"project-create", "department-create"}),
        ("dept_admin", {"project-create"}),
        ("researcher", set()),
        ("viewer", set()),
    ],
)
def test_create_forms_are_offered_only_to_who_may_create(client_for, cluster, role, forms):
    html = client_for(role).get(reverse("console:org")).content.decode()
    for form_id in ("project-create", "department-create"):
        assert (f'id="{form_id}"' in html) == (form_id in forms)


def test_a_department_admin_creates_projects_only_in_their_departments(client_for, cluster):
    html = client_for("dept_admin").get(reverse("console:org")).content.decode()
    choices = form_of(html, "project-create")
    assert ">research</option>" in choices and ">ops</option>" not in choices


def test_department_admin_creates_a_project_and_adds_a_member(client_for, cluster):
    client = client_for("dept_admin")
    response = client.post(
        reverse("console:project_create"),
        new_owner(
            "project",
            department=cluster["dept"].pk,
            name="speech",
            description="ASR models",
            rank=1,
            over_quota_weight=2,
        ),
    )
    speech = Project.objects.get(name="speech")
    assert response.status_code == 302 and response["Location"] == owner_url("owner_detail", speech)
    assert (speech.department, speech.rank, speech.over_quota_weight) == (cluster["dept"], 1, 2)

    factories.user("carol")
    response = client.post(
        owner_url("owner_member_set", speech),
        {"username": "carol", "role": ProjectRole.RESEARCHER},
        follow=True,
    )
    html = response.content.decode()
    assert "carol is researcher of speech." in html
    assert 'data-member="carol"' in html
    assert (
        ProjectMembership.objects.get(project=speech, user__username="carol").role == "researcher"
    )


def test_service_errors_are_shown_next_to_the_fields(client_for, cluster):
    client = client_for("dept_admin")
    html = client.post(
        reverse("console:project_create"),
        new_owner("project", department=cluster["dept"].pk, name="vision"),
    ).content.decode()
    name_field = html.split('data-field="name"', 1)[1].split("</ul>", 1)[0]
    assert "a project named &#x27;vision&#x27; already exists" in name_field
    html = client.post(
        owner_url("owner_member_set", cluster["vision"]), {"username": "nobody", "role": "viewer"}
    ).content.decode()
    assert "no user named &#x27;nobody&#x27;" in form_of(html, "member-form")


def test_a_department_admin_cannot_create_where_they_do_not_manage(client_for, cluster):
    client = client_for("dept_admin")
    data = new_owner("project", department=cluster["other_dept"].pk, name="sneaky")
    html = client.post(reverse("console:project_create"), data).content.decode()
    assert "Select a valid choice" in html
    response = client.post(reverse("console:department_create"), new_owner("department", name="x"))
    assert response.status_code == 403
    assert not Project.objects.filter(name="sneaky").exists()
    assert not Department.objects.filter(name="x").exists()


@pytest.mark.parametrize("role", ["researcher", "viewer", "outsider"])
def test_non_admins_get_403_on_create(client_for, cluster, role):
    client = client_for(role)
    project = new_owner("project", department=cluster["dept"].pk, name="mine")
    assert client.post(reverse("console:project_create"), project).status_code == 403
    department = new_owner("department", name="mine")
    assert client.post(reverse("console:department_create"), department).status_code == 403
    assert not Project.objects.filter(name="mine").exists()


def test_a_system_admin_creates_a_department(client_for, cluster):
    response = client_for("admin").post(
        reverse("console:department_create"),
        new_owner("department", name="robotics", rank=3),
    )
    robotics = Department.objects.get(name="robotics")
    assert response["Location"] == owner_url("owner_detail", robotics)
    assert robotics.rank == 3


def test_a_department_admin_cannot_change_their_departments_rank(client_for, cluster):
    dept = cluster["dept"]
    client = client_for("dept_admin")
    html = client.get(owner_url("owner_detail", dept)).content.decode()
    settings = html.split('id="settings"', 1)[1].split("</section>", 1)[0]
    assert 'name="rank"' not in settings and 'name="over_quota_weight"' not in settings
    assert "set by system admins" in settings
    client.post(
        owner_url("owner_settings", dept),
        {"rank": 9, "over_quota_weight": 5, "description": "our GPUs"},
    )
    dept.refresh_from_db()
    assert (dept.rank, dept.over_quota_weight, dept.description) == (0, 1, "our GPUs")
    assert 'id="member-form"' not in html  # department members are set by system admins
    response = client.post(
        owner_url("owner_member_set", dept), {"username": "bob", "role": "admin"}
    )
    assert response.status_code == 403


def test_a_department_admin_sets_a_projects_rank_and_weight(client_for, cluster):
    vision = cluster["vision"]
    client = client_for("dept_admin")
    response = client.post(
        owner_url("owner_settings", vision), {"rank": 2, "over_quota_weight": 3, "description": ""}
    )
    assert response.status_code == 302
    vision.refresh_from_db()
    assert (vision.rank, vision.over_quota_weight) == (2, 3)
    html = client.post(
        owner_url("owner_settings", vision), {"rank": 2, "over_quota_weight": -1}
    ).content.decode()
    weight_field = html.split('data-field="over_quota_weight"', 1)[1].split("</ul>", 1)[0]
    assert "must be a number of 0 or more" in weight_field
    vision.refresh_from_db()
    assert vision.over_quota_weight == 3


@pytest.mark.parametrize("role", ["researcher", "viewer"])
def test_project_members_read_the_project_but_change_nothing(client_for, cluster, role):
    vision = cluster["vision"]
    client = client_for(role)
    html = client.get(owner_url("owner_detail", vision)).content.decode()
    assert 'data-member="alice"' in html and 'data-member="victor"' in html
    assert "<form" not in html.split('<main id="main">', 1)[1].split("</main>", 1)[0].replace(
        'action="/logout/"', ""
    )
    data = {"rank": 5, "over_quota_weight": 1, "username": "alice", "role": "viewer"}
    for name in ("owner_settings", "owner_member_set", "owner_member_remove", "owner_delete"):
        assert client.post(owner_url(name, vision), data).status_code == 403
    assert client.get(owner_url("owner_delete", vision)).status_code == 403
    vision.refresh_from_db()
    assert vision.rank == 0
    assert ProjectMembership.objects.filter(project=vision).count() == 2


def test_others_projects_are_not_found(client_for, cluster):
    client = client_for("nlp_researcher")
    assert client.get(owner_url("owner_detail", cluster["vision"])).status_code == 404
    assert client.get(owner_url("owner_detail", cluster["nlp"])).status_code == 200
    assert client.get(reverse("console:owner_detail", args=["team", 1])).status_code == 404


def test_a_department_admin_removes_a_member(client_for, cluster):
    vision = cluster["vision"]
    client_for("dept_admin").post(owner_url("owner_member_remove", vision), {"username": "alice"})
    assert list(vision.memberships.values_list("user__username", flat=True)) == ["victor"]


def test_deleting_a_project_says_what_it_does_and_is_refused_while_work_is_unfinished(
    client_for, cluster
):
    vision = cluster["vision"]
    factories.workload(vision, "done", status=WorkloadStatus.COMPLETED)
    running = factories.workload(vision, "train", status=WorkloadStatus.PENDING)
    client = client_for("dept_admin")
    url = owner_url("owner_delete", vision)
    html = client.get(url).content.decode()
    assert "It has 1 unfinished workload: deleting is refused" in html
    assert "Its 1 finished workload and their events are deleted for good." in html
    assert "Its quotas in 1 pool and the roles of its 2 members go with it." in html

    html = client.post(url).content.decode()
    assert "project vision has 1 unfinished workload (train): cancel them first" in html
    assert Project.objects.filter(pk=vision.pk).exists()

    running.status = WorkloadStatus.CANCELLED
    running.save()
    response = client.post(url, follow=True)
    assert "Deleted project vision." in response.content.decode()
    assert not Project.objects.filter(pk=vision.pk).exists()
    assert not Workload.objects.filter(name__in=["done", "train"]).exists()


def test_deleting_a_department_is_for_system_admins_and_needs_it_empty(client_for, cluster):
    dept = cluster["dept"]
    url = owner_url("owner_delete", dept)
    assert client_for("dept_admin").get(url).status_code == 403
    client = client_for("admin")
    assert "It still has 2 projects (nlp, vision)" in client.get(url).content.decode()
    assert "still has projects" in client.post(url).content.decode()
    empty = factories.department("empty")
    assert client.post(owner_url("owner_delete", empty))["Location"] == reverse("console:org")
    assert not Department.objects.filter(name="empty").exists()


def test_the_organisation_page_costs_the_same_queries_however_large(client_for, cluster):
    client = client_for("admin")

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("console:org")).status_code == 200
        return len(captured)

    before = queries()
    for i in range(3):
        factories.researcher(factories.project(factories.department(f"d{i}"), f"p{i}"))
    assert queries() == before
