"""Editing quotas inline, with validation and a what-if run before saving."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.models import Quota, Simulation


def row_url(name, kind, owner, pool):
    return reverse(f"console:{name}", args=[kind, owner.pk, pool.pk])


def row_data(kind, owner, pool, **values):
    prefix = f"{kind}-{owner.pk}-{pool.pk}"
    base = {"gpus": 8, "limit_gpus": "", "over_quota_weight": 1, "rank": 0}
    base.update(values)
    return {f"{prefix}-{k}": v for k, v in base.items()}


HTMX = {"HTTP_HX_REQUEST": "true"}


def test_admin_sees_every_department_and_project(client_for, cluster):
    html = client_for("admin").get(reverse("console:quotas")).content.decode()
    for name in ("research", "ops", "vision", "nlp", "infra"):
        assert f"-{name}-a100" in html


def test_department_admin_sees_only_their_department_and_cannot_edit_it(client_for, cluster):
    html = client_for("dept_admin").get(reverse("console:quotas")).content.decode()
    assert 'data-quota-row="project-vision-a100"' in html
    assert 'data-quota-row="project-infra-a100"' not in html
    dept_row = html.split('data-quota-row="department-research-a100"', 1)[1].split("</tr>", 1)[0]
    assert "<input" not in dept_row and "system admins" in dept_row


def test_saving_a_row_changes_quota_limit_weight_and_rank(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    response = client_for("dept_admin").post(
        row_url("quota_save", "project", vision, pool),
        row_data("project", vision, pool, gpus=6, limit_gpus=10, over_quota_weight=2, rank=1),
        **HTMX,
    )
    assert response.status_code == 200
    assert "Saved." in response.content.decode()
    quota = Quota.objects.get(project=vision, pool=pool)
    vision.refresh_from_db()
    assert (quota.gpus, quota.limit_gpus) == (6, 10)
    assert (vision.over_quota_weight, vision.rank) == (2, 1)


def test_service_errors_come_back_in_the_row_and_nothing_is_saved(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    response = client_for("admin").post(
        row_url("quota_save", "project", vision, pool),
        row_data("project", vision, pool, gpus=6, limit_gpus=4, over_quota_weight=3),
        **HTMX,
    )
    html = response.content.decode()
    assert "the limit (4) must be at least the deserved quota (6)" in html
    assert Quota.objects.get(project=vision, pool=pool).gpus == 8
    vision.refresh_from_db()
    assert vision.over_quota_weight == 1


def test_negative_weight_is_refused_next_to_the_field(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    html = (
        client_for("admin")
        .post(
            row_url("quota_save", "project", vision, pool),
            row_data("project", vision, pool, over_quota_weight=-1),
            **HTMX,
        )
        .content.decode()
    )
    assert "must be a number of 0 or more" in html
    assert Quota.objects.get(project=vision, pool=pool).gpus == 8


def test_plain_post_without_javascript_redirects_with_a_message(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    response = client_for("admin").post(
        row_url("quota_save", "project", vision, pool),
        row_data("project", vision, pool, gpus=5),
        follow=True,
    )
    assert "Saved vision in a100." in response.content.decode()


def test_department_quota_is_for_system_admins(client_for, cluster):
    dept, pool = cluster["dept"], cluster["pool"]
    data = row_data("department", dept, pool, gpus=20)
    url = row_url("quota_save", "department", dept, pool)
    assert client_for("dept_admin").post(url, data, **HTMX).status_code == 403
    assert client_for("admin").post(url, data, **HTMX).status_code == 200
    assert Quota.objects.get(department=dept, pool=pool).gpus == 20


@pytest.mark.parametrize("role", ["researcher", "viewer", "outsider"])
@pytest.mark.parametrize("name", ["quota_save", "quota_whatif"])
def test_non_admins_are_refused(client_for, cluster, role, name):
    vision, pool = cluster["vision"], cluster["pool"]
    url = row_url(name, "project", vision, pool)
    assert client_for(role).post(url, row_data("project", vision, pool)).status_code == 403
    assert Quota.objects.get(project=vision, pool=pool).gpus == 8


def test_department_admin_cannot_touch_other_departments(client_for, cluster):
    infra, pool = cluster["infra"], cluster["pool"]
    url = row_url("quota_save", "project", infra, pool)
    assert client_for("dept_admin").post(url, row_data("project", infra, pool)).status_code == 404


def test_what_if_starts_a_live_simulation_of_the_edited_row(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    response = client_for("admin").post(
        row_url("quota_whatif", "project", vision, pool),
        row_data("project", vision, pool, gpus=2, over_quota_weight=3),
        **HTMX,
    )
    simulation = Simulation.objects.get()
    assert simulation.source == "live"
    assert simulation.changes["quotas"][0]["project"] == "vision"
    assert simulation.changes["quotas"][0]["gpus"] == 2
    assert simulation.changes["weights"][0]["over_quota_weight"] == 3
    html = response.content.decode()
    assert f'data-live-groups="simulation-{simulation.pk}"' in html
    assert Quota.objects.get(project=vision, pool=pool).gpus == 8  # nothing saved


def test_what_if_with_bad_values_explains_instead_of_starting(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    html = (
        client_for("admin")
        .post(
            row_url("quota_whatif", "project", vision, pool),
            row_data("project", vision, pool, gpus="lots"),
            **HTMX,
        )
        .content.decode()
    )
    assert "Fix the values in the row first" in html
    assert not Simulation.objects.exists()
