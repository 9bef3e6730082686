"""The shape of the job a placement becomes (no Slurm needed)."""

from scheduler_core.runtime.executors.slurm.launch import PodLaunch, RunLaunch, job_request


def _launch(pods, pinnable=True):
    return RunLaunch(
        tag="fw-w1-r1", comment="fw:w=1;runs=1", partition="p", workdir="/tmp", pods=pods,
        shell="echo hi", pinnable={p.node: pinnable for p in pods},
    )  # fmt: skip


def _pod(node, gpus, count=0, key="main-0"):
    return PodLaunch(key, node, gpus, {"RANK": "0"}, f"/tmp/{key}.log", gpu_count=count)


def test_one_pod_is_a_job_on_its_node_with_exactly_its_devices():
    request = job_request(_launch([_pod("n1", (3, 5))]))
    (options,) = request.components
    assert options[options.index("-w") : options.index("-w") + 2] == ["-w", "n1"]
    assert "--gres=gpu:g3:1,gpu:g5:1" in options
    assert "srun" not in request.script and "echo hi" in request.script


def test_a_gang_with_the_same_gpus_on_each_node_is_one_job_over_them():
    pods = [_pod("n1", (0, 1), key="main-0"), _pod("n2", (0, 1), key="main-1")]
    request = job_request(_launch(pods))
    (options,) = request.components
    assert "n1,n2" in options and "--ntasks-per-node=1" in options
    assert "exec srun" in request.script and "--het-group" not in request.script


def test_different_gpus_per_node_make_one_component_per_node():
    pods = [_pod("n1", (0,), key="main-0"), _pod("n2", (4, 5), key="main-1")]
    request = job_request(_launch(pods))
    assert len(request.components) == 2
    assert "--gres=gpu:g4:1,gpu:g5:1" in request.components[1]
    assert "--het-group=0-1" in request.script


def test_without_pinnable_devices_the_job_asks_for_counts():
    request = job_request(_launch([_pod("n1", (), count=3)], pinnable=False))
    assert "--gres=gpu:3" in request.components[0]
