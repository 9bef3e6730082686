"""Every page against every role: who may open it, and that nobody sees controls their role
may not use."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests import factories

PAGES = [
    "overview",
    "overview_live",
    "queue",
    "queue_live",
    "workloads",
    "nodes",
    "nodes_live",
    "events",
    "tokens",
    "pools",
    "org",
]
SUBMITTERS = {"admin", "dept_admin", "researcher", "nlp_researcher"}
ADMINS = {"admin", "dept_admin"}
ROLES = ["admin", "dept_admin", "researcher", "nlp_researcher", "viewer", "outsider"]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", PAGES)
def test_every_signed_in_user_opens_the_shared_pages(client_for, queue_state, role, name):
    assert client_for(role).get(reverse(f"console:{name}")).status_code == 200


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("name", "allowed"),
    [("submit", SUBMITTERS), ("quotas", ADMINS), ("simulations", ADMINS)],
)
def test_role_pages_are_refused_to_other_roles(client_for, role, name, allowed):
    response = client_for(role).get(reverse(f"console:{name}"))
    assert response.status_code == (200 if role in allowed else 403)


@pytest.mark.parametrize("name", [*PAGES, "submit", "quotas", "simulations"])
def test_anonymous_users_are_sent_to_sign_in(db, client, name):
    response = client.get(reverse(f"console:{name}"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("console:login"))


@pytest.mark.parametrize(
    ("role", "visible", "hidden"),
    [
        ("admin", ["Quotas", "Simulations", "Submit", "Organisation", "Django admin"], []),
        ("dept_admin", ["Quotas", "Simulations", "Submit", "Organisation"], ["Django admin"]),
        ("researcher", ["Submit", "Organisation", "Pools"], ["Quotas", "Simulations"]),
        ("viewer", ["Organisation", "Pools"], ["Quotas", "Simulations", "Submit"]),
    ],
)
def test_navigation_shows_only_what_the_role_may_use(client_for, role, visible, hidden):
    html = client_for(role).get(reverse("console:overview")).content.decode()
    nav = html.split('<nav class="nav"', 1)[1].split("</nav>", 1)[0]
    for label in visible:
        assert f">{label}</a>" in nav
    for label in hidden:
        assert f">{label}</a>" not in nav


def test_researchers_never_see_node_actions(client_for, cluster):
    html = client_for("researcher").get(reverse("console:nodes")).content.decode()
    assert "gpu-1" in html
    assert "Cordon" not in html and "Drain" not in html
    admin_html = client_for("admin").get(reverse("console:nodes")).content.decode()
    assert "Cordon" in admin_html


def test_overview_shows_pools_quotas_and_recent_preemptions(client_for, cluster, queue_state):
    from scheduler_core.choices import EventType
    from scheduler_core.live_events.recording import event_record

    workload = factories.running_workload(cluster["vision"], cluster["nodes"][:1], name="resnet")
    event_record(type=EventType.ALLOCATED, workload=workload, pool=cluster["pool"])
    event_record(
        type=EventType.PREEMPTED,
        workload=workload,
        pool=cluster["pool"],
        reason="reclaimed by nlp, which is below its quota",
    )
    html = client_for("researcher").get(reverse("console:overview")).content.decode()
    assert 'data-pool="a100"' in html
    assert "reclaimed by nlp, which is below its quota" in html
    assert f'data-queue="project-{cluster["vision"].pk}"' in html
    assert "<svg" in html  # the allocation chart
    # alice (vision) sees the research department's queues, not ops/infra
    assert f'data-queue="project-{cluster["infra"].pk}"' not in html


def test_login_page_signs_in_and_logout_signs_out(cluster, client):
    response = client.post(
        reverse("console:login"), {"username": "alice", "password": "pw-12345678"}
    )
    assert response.status_code == 302
    assert client.get(reverse("console:overview")).status_code == 200
    client.post(reverse("console:logout"))
    assert client.get(reverse("console:overview")).status_code == 302


def test_wrong_password_is_explained(cluster, client):
    response = client.post(reverse("console:login"), {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()
