"""Submitting a workload from the browser: every option, errors next to fields, preview."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.models import Workload
from tests import factories


def form_data(cluster, **overrides):
    data = {
        "project": cluster["vision"].pk,
        "name": "resnet-50",
        "kind": "training",
        "priority": "",
        "preemptible": "",
        "pods": 2,
        "min_pods": "",
        "gpus": 1,
        "cpu": 4,
        "memory": 16,
        "pool_1": cluster["pool"].pk,
        "node_selector": "",
        "duration": 600,
        "image": "pytorch:24.10",
        "command": "python train.py",
        "env": "EPOCHS=3",
        "weight": 1,
        "backoff_limit": 2,
        "checkpoint_every": 60,
        "groups": "",
    }
    data.update(overrides)
    return data


def test_submit_creates_the_workload_with_every_option(client_for, cluster):
    response = client_for("researcher").post(reverse("console:submit"), form_data(cluster))
    workload = Workload.objects.get(name="resnet-50")
    assert response.status_code == 302
    assert response["Location"] == reverse("console:workload_detail", args=[workload.pk])
    assert (workload.pods, workload.min_pods, workload.gpus, workload.cpu) == (2, 2, 1, 4)
    assert workload.priority == 50 and workload.preemptible
    assert workload.backoff_limit == 2
    assert workload.spec == {
        "image": "pytorch:24.10",
        "command": "python train.py",
        "env": {"EPOCHS": "3"},
        "duration": 600.0,
        "checkpoint_every": 60.0,
    }
    assert [c.pool for c in workload.pool_choices.all()] == [cluster["pool"]]
    assert workload.submitted_by == cluster["researcher"]


def test_fractional_gpus_priority_and_node_selector(client_for, cluster):
    data = form_data(
        cluster,
        name="notebook",
        kind="interactive",
        gpus=0.5,
        pods=1,
        priority=120,
        preemptible="yes",
        node_selector="gpu=a100\nzone=eu",
    )
    client_for("researcher").post(reverse("console:submit"), data)
    workload = Workload.objects.get(name="notebook")
    assert workload.gpus == 0.5
    assert workload.priority == 120 and workload.preemptible
    assert workload.node_selector == {"gpu": "a100", "zone": "eu"}


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"gpus": 16, "pods": 1}, "gpus", "the largest node in a100 has 8"),
        ({"gpus": 1.5}, "gpus", "a fraction of one GPU"),
        ({"pods": 2, "min_pods": 3}, "min_pods", "must not exceed pods"),
        ({"kind": "cpu", "gpus": 1}, "gpus", "a CPU-only workload cannot ask for GPUs"),
        ({"name": "Bad Name"}, "name", "use letters, digits, dashes"),
        ({"node_selector": "gpu"}, "node_selector", "write key=value"),
        ({"groups": "[{"}, "groups", "not valid JSON"),
        ({"pods": 3, "gpus": 8}, "min_pods", "the gang needs 24 GPUs at once"),
        ({"ports": "lab Lab"}, "ports", "[1].name: use lowercase letters"),
        ({"ports": "lab, lab"}, "ports", "port name &#x27;lab&#x27; is used twice"),
        ({"ports": "a b c d e f g h i"}, "ports", "must list at most 8"),
    ],
)
def test_service_errors_are_shown_next_to_fields(client_for, cluster, overrides, field, message):
    response = client_for("researcher").post(
        reverse("console:submit"), form_data(cluster, **overrides)
    )
    assert response.status_code == 200
    html = response.content.decode()
    block = html.split(f'data-field="{field}"', 1)[1].split("</div>", 2)
    assert "has-error" in html.split(f'data-field="{field}"', 1)[0][-60:]
    assert message in "".join(block)
    assert not Workload.objects.filter(name=form_data(cluster, **overrides)["name"]).exists()


def test_ports_are_declared_from_the_form(client_for, cluster):
    data = form_data(cluster, name="notebook", ports="lab, tb")
    assert client_for("researcher").post(reverse("console:submit"), data).status_code == 302
    assert Workload.objects.get(name="notebook").spec["ports"] == [
        {"name": "lab", "protocol": "http"},
        {"name": "tb", "protocol": "http"},
    ]


def test_duplicate_name_is_reported_on_the_name(client_for, cluster):
    factories.workload(cluster["vision"], "resnet-50")
    html = (
        client_for("researcher")
        .post(reverse("console:submit"), form_data(cluster))
        .content.decode()
    )
    assert "already exists in project vision" in html.split('data-field="name"', 1)[1]


def test_projects_offered_are_those_the_user_may_submit_to(client_for, cluster):
    html = client_for("researcher").get(reverse("console:submit")).content.decode()
    select = html.split('name="project"', 1)[1].split("</select>", 1)[0]
    assert ">vision<" in select and ">nlp<" not in select


def test_submitting_to_another_project_is_refused(client_for, cluster):
    response = client_for("researcher").post(
        reverse("console:submit"), form_data(cluster, project=cluster["nlp"].pk)
    )
    assert response.status_code == 200
    assert not Workload.objects.exists()


def test_preview_shows_free_gpus_and_quota_headroom(client_for, cluster):
    factories.running_workload(cluster["vision"], cluster["nodes"][:1], gpus=6)
    response = client_for("researcher").post(
        reverse("console:submit_preview"), form_data(cluster, pods=2, gpus=6)
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Needs <strong>12</strong> GPUs at once" in html
    assert "<strong>10</strong> of 16 free" in html
    assert "would wait" in html  # 10 free, but only one node has 6 free devices
    assert "6 of 8 deserved GPUs in use" in html
    assert "Over quota" in html


def test_preview_fits_on_an_empty_cluster(client_for, cluster):
    html = (
        client_for("researcher")
        .post(reverse("console:submit_preview"), form_data(cluster, pods=2, gpus=4))
        .content.decode()
    )
    assert "fits now" in html and "Within quota" in html


def test_viewers_cannot_submit(client_for, cluster):
    assert (
        client_for("viewer").post(reverse("console:submit"), form_data(cluster)).status_code == 403
    )
    assert client_for("viewer").post(reverse("console:submit_preview"), {}).status_code == 403


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"pods": 3, "gpus": 8}, "the gang needs 24 GPUs at once"),
        ({"pods": 1, "gpus": 9}, "a pod asks for 9 GPUs but the largest node"),
        (
            {"groups": '[{"pods": 2, "gpus": 8}, {"pods": 2, "gpus": 1}]'},
            "the gang needs 18 GPUs at once",
        ),
    ],
)
def test_preview_and_submission_agree_on_what_can_never_fit(client_for, cluster, overrides, why):
    """One rule (issue 34, item 7): what Submit refuses, the preview calls "never fits" with
    the same reason, before the refusal and after it (not "would wait", nor "0 GPUs fits
    now")."""
    client = client_for("researcher")
    data = form_data(cluster, **overrides)
    before = client.post(reverse("console:submit_preview"), data).content.decode()
    refused = client.post(reverse("console:submit"), data).content.decode()
    assert not Workload.objects.exists()
    after = refused.split('id="submit-preview"', 1)[1]
    for html in (before, after):
        assert "never fits" in html and why in html
        assert "would wait" not in html and "fits now" not in html
        assert "it queues" not in html and "data-preview-never" in html
    assert why in refused.split('id="submit-preview"', 1)[0]  # next to the field too


def test_preview_of_a_gang_that_fits_counts_each_groups_gpus(client_for, cluster):
    """A pod of 8 GPUs and two of 1 need 10 GPUs at once, as the submission counts them."""
    html = (
        client_for("researcher")
        .post(
            reverse("console:submit_preview"),
            form_data(cluster, groups='[{"pods": 1, "gpus": 8}, {"pods": 2, "gpus": 1}]'),
        )
        .content.decode()
    )
    assert "Needs <strong>10</strong> GPUs at once" in html and "fits now" in html
