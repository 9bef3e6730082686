"""The runs list's live region: the runs newer than those the page was drawn with, as the
reader may see them (a department admin never sees another's run, not even its name)."""

from __future__ import annotations

from django.urls import reverse

from scheduler_core.models import Simulation


def make(cluster, name: str, owner: str) -> Simulation:
    return Simulation.objects.create(name=name, source="live", created_by=cluster[owner])


def test_the_list_subscribes_to_new_runs_after_the_newest_drawn(client_for, cluster):
    old = make(cluster, "old run", "admin")
    html = client_for("admin").get(reverse("console:simulations")).content.decode()
    assert 'data-live-groups="simulations"' in html
    assert f"?new_after={old.pk}" in html
    assert "No runs yet." not in html


def test_new_rows_are_those_newer_than_the_list_and_visible(client_for, cluster):
    old = make(cluster, "old run", "admin")
    mine = make(cluster, "mine", "dept_admin")
    make(cluster, "secret plan", "admin")
    url = f"{reverse('console:simulations')}?new_after={old.pk}"

    as_admin = client_for("admin").get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "secret plan" in as_admin and "mine" in as_admin and "old run" not in as_admin
    assert as_admin.index("secret plan") < as_admin.index("mine")  # newest first
    assert "<html" not in as_admin  # the rows alone

    as_dept_admin = client_for("dept_admin").get(url).content.decode()
    assert f'data-simulation="{mine.pk}"' in as_dept_admin
    assert "secret plan" not in as_dept_admin
    assert f'id="simulation-status-{mine.pk}"' in as_dept_admin  # its progress is live too


def test_an_empty_list_says_so_until_a_run_arrives(client_for, cluster):
    html = client_for("admin").get(reverse("console:simulations")).content.decode()
    assert "No runs yet." in html and "?new_after=0" in html
    url = f"{reverse('console:simulations')}?new_after=0"
    assert "No runs yet." in client_for("admin").get(url).content.decode()
    make(cluster, "first", "admin")
    rows = client_for("admin").get(url).content.decode()
    assert "first" in rows and "No runs yet." not in rows


def test_researchers_get_no_rows(client_for, cluster):
    make(cluster, "secret plan", "admin")
    response = client_for("researcher").get(f"{reverse('console:simulations')}?new_after=0")
    assert response.status_code == 403
