"""What node agents report, as the console shows it: a pod's output and runs on the workload
page, GPU and process usage, idle allocated devices on the GPU map and the node page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from scheduler_core.choices import Backend, NodeState
from scheduler_core.models import Allocation, GpuSample, PodRun, RunUsageSample
from scheduler_core.models.agents import PodRunState
from scheduler_core.services.agents import record_log
from tests import factories


@pytest.fixture
def agent_node(cluster):
    pool = factories.pool("local", backend=Backend.AGENT)
    return factories.node(
        pool, "gpu-a", gpu_count=2, gpu_model="H200", agent_version="0.4.1",
        address="10.0.0.7", last_heartbeat=timezone.now(),
        devices=[{"index": 0, "uuid": "GPU-aaa", "model": "H200", "memory_mib": 143771}],
    )  # fmt: skip


@pytest.fixture
def job(cluster, agent_node):
    """A running workload of project vision with one pod on the agent node: its first run was
    killed, its second prints and runs."""
    workload = factories.running_workload(cluster["vision"], [agent_node], name="train")
    killed = PodRun.objects.create(
        workload=workload, node=agent_node, pod_index=0, epoch=1, state=PodRunState.EXITED,
        signal="SIGKILL", started_at=timezone.now(), ended_at=timezone.now(),
    )  # fmt: skip
    record_log(node=agent_node, run_id=killed.pk, offset=0, data=b"first run\n")
    run = PodRun.objects.create(
        workload=workload, node=agent_node, pod_index=0, epoch=2, state=PodRunState.RUNNING,
        allocation=workload.allocations.get(), started_at=timezone.now(),
    )  # fmt: skip
    record_log(node=agent_node, run_id=run.pk, offset=0, data=b"step 1 <b>loss</b>\n")
    record_log(node=agent_node, run_id=run.pk, offset=19, data=b"step 2\n")
    return workload, killed, run


def _page(client, workload) -> str:
    response = client.get(reverse("console:workload_detail", args=[workload.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_output_panel_shows_the_newest_runs_output_escaped_and_its_runs(client_for, job):
    workload, _, run = job
    html = _page(client_for("researcher"), workload)
    assert "step 1 &lt;b&gt;loss&lt;/b&gt;\nstep 2\n</pre>" in html
    assert "first run" not in html  # only the newest run's output
    assert f'data-run="{run.pk}" data-next-offset="26"' in html
    assert "Run 2 of main-0 on" in html  # its pod's second run, whatever its id
    assert 'data-run-state="running">running</strong>' in html
    assert "killed by SIGKILL" in html  # the history says how the first run ended


def test_runs_are_numbered_from_their_pods_first_run(client_for, cluster, agent_node, job):
    """Ids of runs count every workload's runs; the page counts this pod's."""
    workload, killed, run = job
    other = factories.running_workload(cluster["vision"], [agent_node], name="other", gpus=0)
    for epoch in (3, 4, 5):
        PodRun.objects.create(
            workload=other, node=agent_node, pod_index=0, epoch=epoch, state=PodRunState.EXITED
        )
    again = PodRun.objects.create(
        workload=workload, node=agent_node, pod_index=0, epoch=6, state=PodRunState.STARTING,
    )  # fmt: skip
    assert again.pk > 3
    html = _page(client_for("researcher"), workload)
    assert "Run 3 of main-0 on" in html and f"Run {again.pk} of" not in html
    numbers = [
        html.split(f'data-run-id="{r.pk}"><td>')[1].split("<")[0] for r in (again, run, killed)
    ]
    assert numbers == ["3", "2", "1"]


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"state": PodRunState.EXITED, "exit_code": 3}, "exited with code 3"),
        ({"state": PodRunState.EXITED, "exit_code": 0}, "exited with code 0"),
        (
            {"state": PodRunState.START_FAILED, "reason": "no such file: trian.py"},
            "could not start: no such file: trian.py",
        ),
    ],
)
def test_the_run_state_says_how_the_run_ended(client_for, job, fields, words):
    workload, _, run = job
    PodRun.objects.filter(pk=run.pk).update(**fields)
    html = client_for("researcher").get(
        reverse("console:workload_output_runs", args=[workload.pk]), {"pod": "main-0"}
    )
    assert words in html.content.decode()


def test_a_pod_that_printed_nothing_says_no_output_yet(client_for, cluster, agent_node):
    workload = factories.running_workload(cluster["vision"], [agent_node])
    PodRun.objects.create(workload=workload, node=agent_node, pod_index=0, epoch=1)
    html = _page(client_for("researcher"), workload)
    assert "No output yet." in html


def test_a_simulated_pool_says_its_runs_print_nothing(client_for, cluster):
    workload = factories.running_workload(cluster["vision"], [cluster["nodes"][0]])
    html = _page(client_for("researcher"), workload)
    assert "This pool is simulated: its runs print nothing." in html
    assert '<td class="usage" data-cell="gpu-use"><span class="muted">simulated</span>' in html


def test_pods_show_their_gpus_and_processs_latest_usage(client_for, job, agent_node):
    workload, _, run = job
    now = timezone.now()
    GpuSample.objects.create(
        node=agent_node, index=0, at=now, utilization=87.4, memory_used_mib=40960,
        memory_total_mib=81920,
    )  # fmt: skip
    RunUsageSample.objects.create(run=run, at=now, cpu_percent=231.0, rss_mib=3072)
    html = _page(client_for("researcher"), workload)
    assert "GPU 0: <strong>87 %</strong> · 40.0 / 80.0 GiB" in html
    assert "231 % CPU · 3.0 GiB RSS" in html


def _idle_device(agent_node, workload, *, busy: float, minutes: float) -> None:
    """Device 0 allocated `minutes` ago; a sample just now at `busy` percent."""
    now = timezone.now()
    Allocation.objects.filter(workload=workload).update(created_at=now - timedelta(minutes=minutes))
    GpuSample.objects.create(
        node=agent_node, index=0, at=now, utilization=busy, memory_used_mib=1024,
        memory_total_mib=81920,
    )  # fmt: skip


def test_the_gpu_map_marks_an_allocated_device_idle_for_over_a_minute(client_for, job, agent_node):
    workload, _, _ = job
    _idle_device(agent_node, workload, busy=2.0, minutes=3)
    html = client_for("researcher").get(reverse("console:nodes")).content.decode()
    assert 'class="device idle" role="listitem" data-device="0" data-util="2"' in html
    assert 'data-legend="idle"' in html
    assert 'Busy: 2 · — % · <span class="idle-mark">1 idle</span>' in html
    assert "agent 0.4.1 · 10.0.0.7 · heard" in html


@pytest.mark.parametrize(("busy", "minutes"), [(60.0, 3), (2.0, 0.5)])
def test_a_busy_or_just_allocated_device_is_not_idle(client_for, job, agent_node, busy, minutes):
    workload, _, _ = job
    _idle_device(agent_node, workload, busy=busy, minutes=minutes)
    html = client_for("researcher").get(reverse("console:nodes")).content.decode()
    assert 'class="device" role="listitem" data-device="0"' in html
    assert '<span class="idle-mark">idle</span>' not in html
    assert "1 idle" not in html


def test_the_node_page_shows_its_agent_devices_usage_and_runs(client_for, job, agent_node):
    workload, _, _ = job
    _idle_device(agent_node, workload, busy=1.0, minutes=5)
    html = (
        client_for("researcher")
        .get(reverse("console:node_detail", args=[agent_node.pk]))
        .content.decode()
    )
    assert "<dt>Agent version</dt><dd>0.4.1</dd>" in html
    assert '<dd class="mono">10.0.0.7</dd>' in html
    assert "GPU-aaa" in html
    assert '<td class="num" data-cell="util">1 % <span class="idle-mark">idle</span></td>' in html
    assert '<td class="num" data-cell="memory">1.0 / 80.0 GiB</td>' in html
    assert ">train</a></td><td>main-0</td>" in html  # the run on it


def test_an_unreachable_node_says_so_plainly(client_for, agent_node):
    agent_node.state = NodeState.UNREACHABLE
    agent_node.last_heartbeat = timezone.now() - timedelta(minutes=2)
    agent_node.save()
    client = client_for("researcher")
    for url in (reverse("console:nodes"), reverse("console:node_detail", args=[agent_node.pk])):
        html = client.get(url).content.decode()
        assert "Unreachable: its agent has not been heard for 2m" in html


def test_a_simulated_node_shows_no_usage(client_for, cluster):
    node = cluster["nodes"][0]
    html = (
        client_for("researcher")
        .get(reverse("console:node_detail", args=[node.pk]))
        .content.decode()
    )
    assert "simulated: no agent, no usage" in html
    assert "Agent version" not in html


def test_the_output_of_a_workload_of_another_project_is_a_404(client_for, job):
    workload, _, _ = job
    response = client_for("nlp_researcher").get(
        reverse("console:workload_output_runs", args=[workload.pk])
    )
    assert response.status_code == 404
