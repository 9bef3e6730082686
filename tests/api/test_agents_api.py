"""Agent registration, join tokens, pods' logs, GPU samples in the node API and /metrics,
and `manage.py agent_token`."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from scheduler_core.models import GpuSample, JoinToken, LogChunk, Node, NodeCredential, PodRun
from scheduler_core.services.agents import (
    join_token_create,
    join_token_revoke,
    node_for_credential,
    record_log,
)
from tests import factories
from tests.runtime.agent.fake_agent import registration

REGISTER = "/api/v1/agents/register/"


@pytest.fixture
def agent_pool(cluster):
    return factories.pool("agents", backend="agent")


def _register(join: str, hostname: str = "gpu-a", **overrides):
    return APIClient().post(REGISTER, registration(join, hostname, **overrides), format="json")


# --- registration ---------------------------------------------------------------------------


def test_an_agent_registers_its_node_and_gets_a_credential(agent_pool):
    _, join = join_token_create(pool=agent_pool, by=None)
    response = _register(join)
    assert response.status_code == 201
    body = response.json()
    assert body["node"] == "gpu-a" and body["pool"] == "agents"
    node = Node.objects.get(name="gpu-a")
    assert node.pool == agent_pool and node.gpu_count == 2 and node.gpu_model == "H100"
    assert node.cpu == 32 and node.memory == 256 and node.labels["containers"] == "false"
    assert node_for_credential(body["node_token"]) == (node, node.credential.pk)


def test_registering_again_updates_the_node_and_replaces_its_credential(agent_pool):
    _, join = join_token_create(pool=agent_pool, by=None)
    first = _register(join).json()["node_token"]
    second = _register(join, cpu=64, devices=[], node_token=first).json()["node_token"]
    node = Node.objects.get(name="gpu-a")
    assert node.cpu == 64 and node.gpu_count == 0
    assert node_for_credential(first) is None
    assert node_for_credential(second) == (node, node.credential.pk)
    assert NodeCredential.objects.filter(node=node).count() == 1


@pytest.mark.parametrize("which", ["unknown", "revoked", "expired"])
def test_a_bad_join_token_is_a_401_that_says_why(agent_pool, which):
    token, join = join_token_create(pool=agent_pool, by=None)
    if which == "unknown":
        join = "fwj_nothing"
    elif which == "revoked":
        join_token_revoke(token=token, by=None)
    else:
        JoinToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())
    response = _register(join)
    assert response.status_code == 401
    assert {"unknown": "unknown", "revoked": "revoked", "expired": "expired"}[which] in (
        response.json()["detail"]
    )
    assert not Node.objects.filter(name="gpu-a").exists()


def test_a_name_of_another_pools_node_is_a_409(agent_pool, cluster):
    _, join = join_token_create(pool=agent_pool, by=None)
    response = _register(join, hostname=cluster["nodes"][0].name)
    assert response.status_code == 409
    assert "another pool" in response.json()["detail"]


def test_bad_registration_fields_are_a_400_naming_them(agent_pool):
    _, join = join_token_create(pool=agent_pool, by=None)
    response = _register(join, hostname="GPU_A", devices=[{"index": -1}])
    assert response.status_code == 400
    assert {"hostname", "devices"} <= set(response.json()["fields"]) or "hostname" in str(
        response.json()
    )


# --- join tokens ------------------------------------------------------------------------------


def test_admins_create_list_and_revoke_join_tokens(admin_api, agent_pool):
    url = f"/api/v1/pools/{agent_pool.name}/join-tokens/"
    created = admin_api.post(url, {"description": "rack 4", "expires_in": 3600}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["token"].startswith("fwj_") and body["state"] == "active"
    assert f"--join-token {body['token']}" in body["command"]
    listed = admin_api.get(url).json()
    assert [t["description"] for t in listed["results"]] == ["rack 4"]
    assert "token" not in listed["results"][0]  # the secret is shown once
    revoked = admin_api.post(f"{url}{body['id']}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert _register(body["token"]).status_code == 401


@pytest.mark.parametrize("role", ["department_admin", "researcher", "outsider"])
def test_only_system_admins_manage_join_tokens(client_as, agent_pool, role):
    url = f"/api/v1/pools/{agent_pool.name}/join-tokens/"
    assert client_as(role).get(url).status_code == 403
    assert client_as(role).post(url, {}, format="json").status_code == 403


def test_revoking_an_unknown_join_token_is_a_404(admin_api, agent_pool):
    response = admin_api.post(f"/api/v1/pools/{agent_pool.name}/join-tokens/999/revoke/")
    assert response.status_code == 404


# --- pools and nodes ----------------------------------------------------------------------------


def test_a_pools_backend_and_grace_period_are_shown_and_validated(admin_api, agent_pool):
    url = f"/api/v1/pools/{agent_pool.name}/"
    changed = admin_api.patch(url, {"grace_period": 45}, format="json")
    assert changed.status_code == 200
    assert changed.json()["backend"] == "agent" and changed.json()["grace_period"] == 45
    bad = admin_api.patch(url, {"backend": "kubernetes", "grace_period": -1}, format="json")
    assert bad.status_code == 400
    assert {"backend", "grace_period"} <= set(bad.json()["fields"])


def test_a_node_shows_its_devices_and_latest_gpu_samples(admin_api, agent_pool):
    _, join = join_token_create(pool=agent_pool, by=None)
    _register(join)
    node = Node.objects.get(name="gpu-a")
    now = timezone.now()
    for at, busy in ((now - timedelta(seconds=5), 10.0), (now, 90.0)):
        GpuSample.objects.create(
            node=node, index=0, at=at, utilization=busy, memory_used_mib=512,
            memory_total_mib=81559,
        )  # fmt: skip
    body = admin_api.get("/api/v1/nodes/gpu-a/").json()
    assert [d["uuid"] for d in body["devices"]] == ["GPU-aaa", "GPU-bbb"]
    assert body["address"] == "10.0.0.7" and body["agent_version"] == "0.1.0"
    assert [(g["index"], g["utilization"]) for g in body["gpus"]] == [(0, 90.0)]
    listed = admin_api.get("/api/v1/nodes/", {"pool": "agents"}).json()["results"]
    assert [g["utilization"] for g in listed[0]["gpus"]] == [90.0]


def test_metrics_export_the_latest_gpu_samples(client, settings, agent_pool):
    settings.METRICS_TOKEN = "scrape-0123456789"
    node = factories.node(agent_pool, "gpu-m")
    GpuSample.objects.create(
        node=node, index=1, at=timezone.now(), utilization=75, memory_used_mib=2,
        memory_total_mib=100,
    )  # fmt: skip
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-0123456789").content.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    labels = (("gpu", "1"), ("node", "gpu-m"))
    assert samples[("fairway_gpu_utilization", labels)] == 75
    assert samples[("fairway_gpu_memory_used_bytes", labels)] == 2 * 1024 * 1024


# --- logs ---------------------------------------------------------------------------------


@pytest.fixture
def logged(cluster, agent_pool):
    """A workload of project vision with two pods on an agent node, and their output."""
    node = factories.node(agent_pool, "gpu-l")
    workload = factories.workload(cluster["vision"], pods=2, min_pods=2)
    old = PodRun.objects.create(workload=workload, node=node, pod_index=0, epoch=1)
    record_log(node=node, run_id=old.pk, offset=0, data=b"old run\n")
    runs = [
        PodRun.objects.create(workload=workload, node=node, pod_index=i, epoch=2 + i)
        for i in (0, 1)
    ]
    record_log(node=node, run_id=runs[0].pk, offset=0, data=b"a1\na2\n")
    record_log(node=node, run_id=runs[0].pk, offset=6, data=b"a3\na4\n")
    record_log(node=node, run_id=runs[1].pk, offset=0, data=b"b1\n")
    return workload, runs


def test_logs_show_the_newest_run_of_each_pod(researcher_api, logged):
    workload, runs = logged
    response = researcher_api.get(f"/api/v1/workloads/{workload.pk}/logs/")
    assert response.status_code == 200
    pods = response.json()["pods"]
    assert [(p["pod"], p["run"], p["text"]) for p in pods] == [
        ("main-0", runs[0].pk, "a1\na2\na3\na4\n"),
        ("main-1", runs[1].pk, "b1\n"),
    ]
    assert pods[0]["offset"] == 0 and pods[0]["next_offset"] == 12
    assert pods[0]["node"] == "gpu-l" and pods[0]["state"] == "starting"


def test_logs_of_one_pod_since_an_offset_or_its_last_lines(researcher_api, logged):
    workload, _ = logged
    url = f"/api/v1/workloads/{workload.pk}/logs/"
    since = researcher_api.get(url, {"pod": "main-0", "since": 4}).json()["pods"]
    assert [(p["pod"], p["offset"], p["text"]) for p in since] == [("main-0", 4, "2\na3\na4\n")]
    tail = researcher_api.get(url, {"pod": "main-0", "tail": 2}).json()["pods"][0]
    assert (tail["offset"], tail["text"], tail["next_offset"]) == (6, "a3\na4\n", 12)


@pytest.mark.parametrize(
    "params, field",
    [({"pod": "main"}, "pod"), ({"since": -1}, "since"), ({"tail": "x"}, "tail")],
)
def test_bad_log_parameters_are_a_400_naming_them(researcher_api, logged, params, field):
    workload, _ = logged
    response = researcher_api.get(f"/api/v1/workloads/{workload.pk}/logs/", params)
    assert response.status_code == 400 and field in response.json()["fields"]


def test_logs_of_a_workload_of_another_project_are_a_404(client_as, logged):
    workload, _ = logged
    response = client_as("outsider").get(f"/api/v1/workloads/{workload.pk}/logs/")
    assert response.status_code == 404
    assert LogChunk.objects.exists()


# --- manage.py agent_token ----------------------------------------------------------------


def test_agent_token_prints_the_token_and_the_agent_command(agent_pool):
    out = StringIO()
    call_command("agent_token", "agents", "--server", "https://fw.example", stdout=out)
    token = JoinToken.objects.get(pool=agent_pool)
    lines = out.getvalue()
    raw = lines.split("(shown only now): ")[1].split()[0]
    assert token.prefix == raw[: len(token.prefix)]
    assert f"fairway-agent --server https://fw.example --join-token {raw}" in lines
    assert _register(raw).status_code == 201


def test_agent_token_for_an_unknown_pool_lists_the_pools(agent_pool):
    with pytest.raises(CommandError, match="agents"):
        call_command("agent_token", "nope")
