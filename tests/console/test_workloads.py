"""The workloads list, a workload's page, and the actions on it, by role."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.choices import EventType, WorkloadStatus
from scheduler_core.live_events.recording import event_record
from tests import factories


@pytest.fixture
def workloads(cluster):
    running = factories.running_workload(cluster["vision"], cluster["nodes"][:2], name="resnet")
    pending = factories.workload(
        cluster["vision"],
        "bert-big",
        gpus=4,
        pods=4,
        min_pods=4,
        queue_position=1,
        pending_reason="waiting for 16 GPUs; 0 free in a100",
        submitted_by=cluster["researcher"],
    )
    other = factories.workload(cluster["infra"], "infra-job", kind="inference")
    return {"running": running, "pending": pending, "other": other}


def test_list_shows_only_visible_workloads_with_live_keys(client_for, workloads):
    html = client_for("researcher").get(reverse("console:workloads")).content.decode()
    assert f'data-workload-id="{workloads["running"].pk}"' in html
    assert f'data-workload-id="{workloads["pending"].pk}"' in html
    assert "infra-job" not in html
    assert "waiting for 16 GPUs; 0 free in a100" in html
    assert "gpu-1, gpu-2" in html
    assert 'data-live-groups="cluster"' in html


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("status=pending", ["bert-big"], ["resnet"]),
        ("status=active", ["bert-big", "resnet"], []),
        ("kind=inference", ["infra-job"], ["resnet"]),
        ("user=alice", ["bert-big"], ["resnet"]),
    ],
)
def test_list_filters(client_for, workloads, query, shown, hidden):
    html = client_for("admin").get(reverse("console:workloads") + "?" + query).content.decode()
    for name in shown:
        assert f">{name}</a>" in html
    for name in hidden:
        assert f">{name}</a>" not in html


def test_filtering_by_project_subscribes_to_that_project(client_for, cluster, workloads):
    url = reverse("console:workloads") + f"?project={cluster['vision'].pk}"
    html = client_for("researcher").get(url).content.decode()
    assert f'data-live-groups="project-{cluster["vision"].pk}"' in html


def test_row_partial_respects_filters_and_access(client_for, workloads):
    client = client_for("researcher")
    url = reverse("console:workload_row", args=[workloads["pending"].pk])
    assert "bert-big" in client.get(url).content.decode()
    assert client.get(url + "?status=running").status_code == 204
    other = reverse("console:workload_row", args=[workloads["other"].pk])
    assert client.get(other).status_code == 204


def test_detail_shows_spec_pods_and_timeline(client_for, cluster, workloads):
    running = workloads["running"]
    event_record(
        type=EventType.ALLOCATED,
        workload=running,
        pool=cluster["pool"],
        reason="started 2 pods in pool a100",
    )
    event_record(
        type=EventType.PREEMPTED,
        workload=running,
        pool=cluster["pool"],
        reason="reclaimed by nlp (below its quota of 4 GPUs)",
    )
    response = client_for("viewer").get(reverse("console:workload_detail", args=[running.pk]))
    html = response.content.decode()
    assert "gpu-1" in html and "gpu-2" in html
    assert "reclaimed by nlp (below its quota of 4 GPUs)" in html
    assert f'data-live-groups="workload-{running.pk}"' in html
    assert "Cancel" not in html  # viewers read only


def test_detail_of_a_workload_back_in_the_queue_says_when_it_last_started(client_for, workloads):
    running = workloads["running"]
    url = reverse("console:workload_detail", args=[running.pk])
    assert "<dt>Started</dt>" in client_for("viewer").get(url).content.decode()
    running.status = WorkloadStatus.PENDING
    running.save()
    assert "<dt>Last started</dt>" in client_for("viewer").get(url).content.decode()


def test_detail_of_an_invisible_workload_is_not_found(client_for, workloads):
    url = reverse("console:workload_detail", args=[workloads["other"].pk])
    assert client_for("researcher").get(url).status_code == 404
    assert client_for("admin").get(url).status_code == 200


def test_researcher_cancels_suspends_resumes_and_reprioritises(client_for, workloads):
    client = client_for("researcher")
    pending = workloads["pending"]
    r = client.post(reverse("console:workload_priority", args=[pending.pk]), {"priority": 80})
    assert r.status_code == 302
    pending.refresh_from_db()
    assert pending.priority == 80
    client.post(reverse("console:workload_suspend", args=[pending.pk]))
    pending.refresh_from_db()
    assert pending.status == WorkloadStatus.SUSPENDED
    client.post(reverse("console:workload_resume", args=[pending.pk]))
    pending.refresh_from_db()
    assert pending.status == WorkloadStatus.PENDING
    r = client.post(reverse("console:workload_cancel", args=[pending.pk]), follow=True)
    pending.refresh_from_db()
    assert pending.status == WorkloadStatus.CANCELLED
    assert "bert-big was cancelled." in r.content.decode()


def test_action_errors_are_shown_not_raised(client_for, workloads):
    client = client_for("researcher")
    running = workloads["running"]
    r = client.post(reverse("console:workload_resume", args=[running.pk]), follow=True)
    assert r.status_code == 200
    assert "only suspended workloads can be resumed" in r.content.decode()
    r = client.post(
        reverse("console:workload_priority", args=[running.pk]), {"priority": "x"}, follow=True
    )
    assert "Priority must be a whole number." in r.content.decode()


@pytest.mark.parametrize("action", ["cancel", "suspend", "resume", "priority"])
def test_viewers_may_not_act(client_for, workloads, action):
    url = reverse(f"console:workload_{action}", args=[workloads["pending"].pk])
    assert client_for("viewer").post(url, {"priority": 1}).status_code == 403
    assert client_for("nlp_researcher").post(url, {"priority": 1}).status_code == 404


def test_actions_need_post(client_for, workloads):
    url = reverse("console:workload_cancel", args=[workloads["pending"].pk])
    assert client_for("researcher").get(url).status_code == 405
