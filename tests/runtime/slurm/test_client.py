"""The Slurm client against the real cluster of bin/slurm: held and pinned submissions,
release, bulk state, signals, cancel, completion records and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_core.runtime.executors.slurm.client import JobRequest, SlurmClient
from scheduler_core.runtime.executors.slurm.errors import SlurmRejected, SlurmUnavailable
from scheduler_core.runtime.executors.slurm.launch import PodLaunch, RunLaunch, job_request
from tests.runtime.slurm.conftest import PARTITION, wait_file, wait_for

pytestmark = pytest.mark.slurm


def _launch(tag: str, tmp_path: Path, pods: list[PodLaunch], shell: str) -> RunLaunch:
    return RunLaunch(
        tag=tag, comment=f"fairway test {tag}", partition=PARTITION, workdir=str(tmp_path),
        pods=pods, shell=shell, pinnable={p.node: True for p in pods},
        batch_log=str(tmp_path / "batch.out"),
    )  # fmt: skip


def _pod(tmp_path: Path, key: str, node: str, gpus: tuple[int, ...], rank: int) -> PodLaunch:
    return PodLaunch(key, node, gpus, {"RANK": str(rank)}, str(tmp_path / f"{key}.log"))


def test_the_partition_nodes_and_their_gpus_are_discovered(slurm):
    nodes = slurm.nodes(PARTITION)
    assert len(nodes) >= 3
    assert all(n.pinnable and n.gpus >= 4 for n in nodes)
    assert slurm.nodes("no-such-partition") == []


def test_a_held_pinned_job_starts_on_release_with_exactly_its_devices(slurm, tag, tmp_path):
    pod = _pod(tmp_path, "main-0", "fw2", (1, 3), 0)
    launch = _launch(tag, tmp_path, [pod], 'echo "gpus=$CUDA_VISIBLE_DEVICES rank=$RANK"')
    job_id = slurm.submit(job_request(launch))
    (held,) = wait_for(slurm, job_id, lambda jobs: jobs[0].pending)
    assert (held.name, held.reason) == (tag, "JobHeldUser")
    slurm.release([job_id])
    (ended,) = wait_for(slurm, job_id, lambda jobs: jobs[0].ended)
    assert (ended.state, ended.exit_code, ended.nodes) == ("COMPLETED", 0, ("fw2",))
    assert "gpus=1,3 rank=0" in (tmp_path / "main-0.log").read_text()


def test_a_gang_over_nodes_runs_every_pod_with_its_own_variables(slurm, tag, tmp_path):
    pods = [_pod(tmp_path, f"main-{i}", node, (0, 1), i) for i, node in enumerate(["fw1", "fw3"])]
    launch = _launch(
        tag,
        tmp_path,
        pods,
        'echo "$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES rank=$RANK"; sleep 2',
    )
    job_id = slurm.submit(job_request(launch))
    slurm.release([job_id])
    (job,) = wait_for(slurm, job_id, lambda jobs: jobs[0].running)
    assert job.gpus_by_node == {"fw1": (0, 1), "fw3": (0, 1)}  # one job over two nodes
    assert "fw3 gpus=0,1 rank=1" in wait_file(tmp_path / "main-1.log", "rank=1")
    assert "fw1 gpus=0,1 rank=0" in wait_file(tmp_path / "main-0.log", "rank=0")


def test_different_gpus_per_node_make_a_heterogeneous_job_and_pods_share_a_node(
    slurm, tag, tmp_path
):
    pods = [
        _pod(tmp_path, "main-0", "fw1", (4,), 0),
        _pod(tmp_path, "main-1", "fw1", (6, 7), 1),
        _pod(tmp_path, "main-2", "fw3", (5,), 2),
    ]
    launch = _launch(
        tag, tmp_path, pods, 'echo "$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES rank=$RANK"'
    )
    job_id = slurm.submit(job_request(launch))
    slurm.release([job_id])
    jobs = wait_for(slurm, job_id, lambda jobs: all(j.ended for j in jobs))
    assert sorted(j.het_job_offset for j in jobs) == [0, 1]
    assert {j.state for j in jobs} == {"COMPLETED"}
    assert "fw1 gpus=4 rank=0" in (tmp_path / "main-0.log").read_text()
    assert "fw1 gpus=6,7 rank=1" in (tmp_path / "main-1.log").read_text()
    assert "fw3 gpus=5 rank=2" in (tmp_path / "main-2.log").read_text()


def test_a_signal_reaches_the_pod_and_cancel_ends_the_job(slurm, tag, tmp_path):
    pod = _pod(tmp_path, "main-0", "fw2", (6,), 0)
    script = "trap 'echo got USR1' USR1; echo ready; while true; do sleep 0.1; done"
    job_id = slurm.submit(job_request(_launch(tag, tmp_path, [pod], script)))
    slurm.release([job_id])
    wait_file(tmp_path / "main-0.log", "ready")
    slurm.signal(job_id, "USR1")
    wait_file(tmp_path / "main-0.log", "got USR1")
    slurm.cancel([job_id])
    (job,) = wait_for(slurm, job_id, lambda jobs: jobs[0].ended)
    assert job.state == "CANCELLED"
    slurm.cancel([job_id])  # again: already gone is fine


def test_a_failing_job_reports_its_exit_code_in_the_completion_record(slurm, tag, tmp_path):
    pod = _pod(tmp_path, "main-0", "fw2", (7,), 0)
    job_id = slurm.submit(job_request(_launch(tag, tmp_path, [pod], "exit 3")), hold=False)
    (job,) = wait_for(slurm, job_id, lambda jobs: jobs[0].ended)
    assert (job.state, job.exit_code) == ("FAILED", 3)
    jobcomp = slurm.config()["JobCompLoc"]
    record = wait_for_record(slurm, job_id, jobcomp)
    assert (record.state, record.exit_code, record.name) == ("FAILED", 3, tag)


def wait_for_record(slurm, job_id, jobcomp):
    import time

    for _ in range(50):
        found = slurm.ended_jobs([job_id], jobcomp_file=jobcomp)
        if job_id in found:
            return found[job_id]
        time.sleep(0.1)
    raise AssertionError(f"no completion record of {job_id}")


def test_a_job_slurm_refuses_raises_its_message(slurm, tag, tmp_path):
    request = JobRequest(
        [["-p", PARTITION, "-J", tag, "-w", "no-such-node"]], "#!/bin/bash\ntrue\n", str(tmp_path)
    )
    with pytest.raises(SlurmRejected, match=r"(?i)invalid node name"):
        slurm.submit(request)


def test_an_unreachable_controller_raises_unavailable(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=nowhere\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=9\n"
        "AuthType=auth/none\nCredType=cred/none\nMessageTimeout=1\n"
        "NodeName=x CPUs=1\nPartitionName=p Nodes=x\n"
    )
    client = SlurmClient(conf=str(conf), timeout=10)
    with pytest.raises(SlurmUnavailable):
        client.jobs()
    assert client.ping() is False
