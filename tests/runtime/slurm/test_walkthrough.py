"""A Slurm pool as its users meet it, on the real cluster of bin/slurm: a workload submitted
over the API, watched in the console, its output read and the workload cancelled with the
CLI (a real `fairway` process against a live server), and the quotas page's what-if."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import PodRun, Quota, Workload
from scheduler_core.runtime.executors.slurm.client import SlurmClient
from scheduler_core.services.tokens import token_create
from tests.cli.conftest import run_cli
from tests.console.quota_rows import HTMX, row_data, row_url
from tests.runtime.slurm.conftest import logs, settle, status

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]


def _submit_over_the_api(
    client, name: str, project: str, gpus: int, command: str, pods: int = 1
) -> Workload:
    body = {"name": name, "project": project, "pools": ["slurm"], "gpus": gpus, "pods": pods,
            "spec": {"command": command}}  # fmt: skip
    response = client.post("/api/v1/workloads/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return Workload.objects.get(pk=response.json()["id"])


def test_a_slurm_pool_through_the_api_console_cli_and_whatif(
    slurm_pool, slurm_conf, client, live_server, tmp_path
):
    admin = slurm_pool["admin"]
    client.force_login(admin)
    w = _submit_over_the_api(client, "walk", "high", 2, "echo hello-from-slurm; sleep 120")
    settle(lambda: status(w) == WorkloadStatus.RUNNING and "hello-from-slurm" in logs(w))
    run = PodRun.objects.get(workload=w)
    job_id = int(run.external_id)
    assert [j for j in SlurmClient(conf=slurm_conf).jobs() if j.root_id == job_id and j.running]

    html = client.get(reverse("console:workload_detail", args=[w.pk])).content.decode()
    assert "Running" in html and run.node.name in html

    token = token_create(user=admin, name="cli")[1]
    config = tmp_path / "fairway" / "config.json"
    shown = run_cli("logs", str(w.pk), url=live_server.url, token=token, config=config)
    assert shown.returncode == 0, shown.stderr
    assert "hello-from-slurm" in shown.stdout

    # what-if: `low`, held to no GPUs by its limit, would start its workload at once
    low, pool = slurm_pool["low"], slurm_pool["pool"]
    Quota.objects.filter(project=low, pool=pool).update(limit_gpus=0)
    held = _submit_over_the_api(client, "held", "low", 8, "sleep 120")
    settle(lambda: status(held) == WorkloadStatus.PENDING)
    response = client.post(
        row_url("quota_whatif", "project", low, pool),
        row_data("project", low, pool, gpus=0, limit_gpus=8), **HTMX,
    )  # fmt: skip
    assert response.status_code == 200
    now = response.content.decode().split("data-whatif-now>", 1)[1].split("</p>", 1)[0]
    assert "start" in now and "held" in now, now
    assert status(held) == WorkloadStatus.PENDING  # nothing saved, nothing done

    cancelled = run_cli("cancel", str(w.pk), url=live_server.url, token=token, config=config)
    assert cancelled.returncode == 0, cancelled.stderr
    slurm = SlurmClient(conf=slurm_conf)
    settle(lambda: not [j for j in slurm.jobs() if j.root_id == job_id and not j.ended])
    assert status(w) == WorkloadStatus.CANCELLED
