"""Editing quotas inline, with validation (the what-if panel: test_whatif_panel.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.models import Quota
from tests import factories
from tests.console.quota_rows import HTMX, row_data, row_url


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


def test_saving_a_row_changes_its_quota_and_limit(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    response = client_for("dept_admin").post(
        row_url("quota_save", "project", vision, pool),
        row_data("project", vision, pool, gpus=6, limit_gpus=10),
        **HTMX,
    )
    assert response.status_code == 200
    assert "Saved." in response.content.decode()
    quota = Quota.objects.get(project=vision, pool=pool)
    assert (quota.gpus, quota.limit_gpus) == (6, 10)


def test_a_pool_row_does_not_undo_the_owners_weight_set_elsewhere(client_for, cluster):
    """The h100 row's Save once put back the weight saved from the a100 row: rank and weight
    are the owner's, edited on its page, and no quota row carries them."""
    vision, a100 = cluster["vision"], cluster["pool"]
    h100 = factories.pool("h100")
    client = client_for("dept_admin")
    page = client.get(reverse("console:quotas")).content.decode()
    h100_row = page.split('data-quota-row="project-vision-h100"', 1)[1].split("</tr>", 1)[0]
    assert "over_quota_weight" not in h100_row and "rank 0 · weight 1" in h100_row
    client.post(
        reverse("console:owner_settings", args=["project", vision.pk]),
        {"rank": 2, "over_quota_weight": 3, "description": ""},
    )
    client.post(
        row_url("quota_save", "project", vision, h100),
        row_data("project", vision, h100, gpus=2, over_quota_weight=1, rank=0),
        **HTMX,
    )
    vision.refresh_from_db()
    assert (vision.rank, vision.over_quota_weight) == (2, 3)
    assert Quota.objects.get(project=vision, pool=h100).gpus == 2
    assert Quota.objects.get(project=vision, pool=a100).gpus == 8


def test_every_bar_is_drawn_on_the_largest_figure_of_the_page(client_for, cluster, queue_state):
    html = client_for("admin").get(reverse("console:quotas")).content.decode()
    # research's deserved 12 is the largest figure: infra's 4 deserved is a third of it
    assert 'one scale, 0 to <span id="quota-scale">12 GPUs</span>' in html
    infra_row = html.split('data-quota-row="project-infra-a100"', 1)[1].split("</tr>", 1)[0]
    assert "left: calc(33.3% - 1px)" in infra_row


def test_service_errors_come_back_in_the_row_and_nothing_is_saved(client_for, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    response = client_for("admin").post(
        row_url("quota_save", "project", vision, pool),
        row_data("project", vision, pool, gpus=6, limit_gpus=4),
        **HTMX,
    )
    html = response.content.decode()
    assert "the limit (4) must be at least the deserved quota (6)" in html
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


def test_the_live_figures_are_each_rows_held_and_fair_share(client_for, cluster, queue_state):
    """What the quotas page swaps in live: one element per row it shows, by id."""
    html = client_for("dept_admin").get(reverse("console:quota_now")).content.decode()
    vision, pool = cluster["vision"], cluster["pool"]
    marker = f'id="now-project-{vision.pk}-{pool.pk}"'
    vision_now = html.split(marker, 1)[1].split("</div></div>")[0]
    assert "10 held · fairshare 9" in vision_now
    assert f'id="now-project-{cluster["infra"].pk}-' not in html  # another department's
    assert client_for("researcher").get(reverse("console:quota_now")).status_code == 403
