"""Runs with real processes: environment, exit codes, start failures, stopping, epochs,
reattaching after an agent restart and fencing."""

import json
import os
import time

from fairway_agent import protocol
from fairway_agent.containers import container_argv

from tests.agent.helpers import (
    WAIT_FOR_GO,
    manager,
    pod,
    run_dir,
    start_msg,
    wait_for,
    wait_until_ended,
)

PRINT_ENV = """
import json, os
keys = ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
        "FAIRWAY_GPU_FRACTION", "FAIRWAY_RUN_DIR", "FAIRWAY_STOP_FILE",
        "FAIRWAY_CHECKPOINT_DIR", "FAIRWAY_WORKLOAD", "FAIRWAY_JOIN_TOKEN"]
print(json.dumps({k: os.environ.get(k) for k in keys}))
"""


def output(runs, run):
    return (run_dir(runs, run) / "output.log").read_text()


def test_two_runs_see_only_their_own_gpus(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRWAY_JOIN_TOKEN", "secret")
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod(PRINT_ENV), gpus=[0, 1]))
    runs.start(start_msg(2, 2, pod(PRINT_ENV), gpus=[3], gpu_fraction=0.5))
    envs = {}
    for run in (1, 2):
        assert wait_until_ended(runs, run).exit_code == 0
        envs[run] = json.loads(output(runs, run))
    assert envs[1]["CUDA_VISIBLE_DEVICES"] == envs[1]["NVIDIA_VISIBLE_DEVICES"] == "0,1"
    assert envs[2]["CUDA_VISIBLE_DEVICES"] == envs[2]["NVIDIA_VISIBLE_DEVICES"] == "3"
    assert envs[2]["FAIRWAY_GPU_FRACTION"] == "0.5"
    assert envs[1]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert envs[1]["FAIRWAY_WORKLOAD"] == "train"
    assert envs[1]["FAIRWAY_JOIN_TOKEN"] is None  # agent secrets stay out of pods
    assert envs[1]["FAIRWAY_CHECKPOINT_DIR"] == str(tmp_path / "state/checkpoints/train-1")
    assert os.path.isdir(envs[1]["FAIRWAY_RUN_DIR"])
    assert envs[1]["FAIRWAY_STOP_FILE"] != envs[2]["FAIRWAY_STOP_FILE"]


def test_exit_codes_are_reported(tmp_path):
    runs = manager(tmp_path / "state", checkpoint_root=tmp_path / "ckpt")
    runs.start(start_msg(1, 1, pod("print('ok')")))
    runs.start(start_msg(2, 2, None, shell="echo failing >&2; exit 3"))
    ok, failed = wait_until_ended(runs, 1), wait_until_ended(runs, 2)
    assert (ok.state, ok.exit_code, ok.signal) == (protocol.RUN_EXITED, 0, None)
    assert (failed.state, failed.exit_code) == (protocol.RUN_EXITED, 3)
    assert output(runs, 2) == "failing\n"
    assert (tmp_path / "ckpt/train-1").is_dir()


def test_start_failures_say_why(tmp_path):
    runs = manager(tmp_path / "state", which=lambda name: None)
    runs.start(start_msg(1, 1, ["no-such-command-xyz", "--flag"]))
    runs.start(start_msg(2, 2, pod("pass"), workdir=str(tmp_path / "missing")))
    image = runs.start(start_msg(3, 3, None, image="pytorch/pytorch:latest"))
    wrong_gpu = runs.start(start_msg(4, 4, pod("pass"), gpus=[9]))
    assert image.state == wrong_gpu.state == protocol.RUN_START_FAILED
    assert image.reason == "no container runtime (docker or podman) on node n1"
    assert wrong_gpu.reason == "GPU 9 is not on node n1"
    assert runs.capabilities == {"containers": False}
    for run, reason in (
        (1, "command not found: no-such-command-xyz"),
        (2, f"working directory does not exist: {tmp_path / 'missing'}"),
    ):
        status = wait_until_ended(runs, run)
        assert (status.state, status.reason) == (protocol.RUN_START_FAILED, reason)
        assert reason in output(runs, run)


TRAP_SIGTERM = WAIT_FOR_GO.replace(
    "import os,",
    """import signal, sys
def checkpoint(signum, frame):
    d = os.environ["FAIRWAY_CHECKPOINT_DIR"]
    stop = os.path.exists(os.environ["FAIRWAY_STOP_FILE"])
    open(os.path.join(d, "ckpt.txt"), "w").write(f"stop file seen: {stop}")
    sys.exit(0)
signal.signal(signal.SIGTERM, checkpoint)
import os,""",
)
IGNORE_SIGTERM = WAIT_FOR_GO.replace(
    "import os,", "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nimport os,"
)


def test_sigterm_trapped_writes_checkpoint_within_grace(tmp_path):
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod(TRAP_SIGTERM)))
    wait_for(lambda: (run_dir(runs, 1) / "work/ready").exists(), what="the pod to be ready")
    runs.signal(1, reason=protocol.STOP_PREEMPT, grace_period=8)
    status = wait_until_ended(runs, 1)
    assert (status.exit_code, status.signal) == (0, None)
    ckpt = tmp_path / "state/checkpoints/train-1/ckpt.txt"
    assert ckpt.read_text() == "stop file seen: True"


def test_sigterm_ignored_is_killed_after_grace(tmp_path):
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod(IGNORE_SIGTERM)))
    wait_for(lambda: (run_dir(runs, 1) / "work/ready").exists(), what="the pod to be ready")
    asked = time.monotonic()
    runs.signal(1, reason=protocol.STOP_CANCEL, grace_period=0.5)
    status = wait_until_ended(runs, 1)
    assert (status.exit_code, status.signal) == (None, "SIGKILL")
    assert time.monotonic() - asked >= 0.5


def test_a_late_or_repeated_start_never_runs_twice(tmp_path):
    runs = manager(tmp_path / "state")
    argv = pod("print('started')")
    runs.start(start_msg(1, 5, argv))
    again = runs.start(start_msg(1, 5, argv))
    late = runs.start(start_msg(2, 4, argv))
    assert again.epoch == 5 and again.state in (protocol.RUN_STARTING, protocol.RUN_RUNNING)
    assert late.state == protocol.RUN_START_FAILED and "stale" in late.reason
    assert wait_until_ended(runs, 1).exit_code == 0
    assert runs.start(start_msg(1, 5, argv)).state == protocol.RUN_EXITED
    assert output(runs, 1) == "started\n"
    assert "2" not in runs.runs
    # The highest epoch survives a restart of the agent.
    restarted = manager(tmp_path / "state")
    assert restarted.max_epoch == 5
    assert restarted.start(start_msg(3, 5, argv)).state == protocol.RUN_START_FAILED


def test_a_new_agent_adopts_running_runs_and_reports_ended_ones(tmp_path):
    first = manager(tmp_path / "state")
    first.start(start_msg(1, 1, pod(WAIT_FOR_GO)))
    first.start(start_msg(2, 2, pod("raise SystemExit(3)")))
    wait_until_ended(first, 2)
    wait_for(lambda: (run_dir(first, 1) / "work/ready").exists(), what="the pod to be ready")

    second = manager(tmp_path / "state")
    assert second.runs["1"].status.state == protocol.RUN_RUNNING
    assert second.runs["2"].status.exit_code == 3
    (run_dir(second, 1) / "work/go").touch()
    assert wait_until_ended(second, 1).exit_code == 0


def test_fencing_stops_the_command_when_the_lease_goes_stale(tmp_path):
    runs = manager(tmp_path / "state")
    runs.lease_file.touch()
    runs.fence_after = 1
    runs.start(start_msg(1, 1, pod(WAIT_FOR_GO), grace_period=0.5))
    wait_for(lambda: (run_dir(runs, 1) / "work/ready").exists(), what="the pod to be ready")
    assert runs.runs["1"].status.state != protocol.RUN_EXITED
    stale = time.time() - 60
    os.utime(runs.lease_file, (stale, stale))
    status = wait_until_ended(runs, 1)
    assert status.signal == "SIGTERM"
    assert "fenced" in status.reason
    assert (run_dir(runs, 1) / "stop").exists()


def test_container_commands_hand_over_exactly_the_allocated_gpus():
    common = {
        "run": "7",
        "image": "img:1",
        "command": ["python", "train.py"],
        "env": {"FAIRWAY_RANK": "0"},
        "gpus": [2, 5],
        "mounts": ["/ckpt"],
        "workdir": None,
        "user": "65534:65534",
    }
    docker = container_argv(runtime="docker", **common)
    assert docker[docker.index("--gpus") + 1] == '"device=2,5"'
    assert docker[-3:] == ["img:1", "python", "train.py"]
    assert docker[docker.index("-e") : docker.index("-e") + 2] == ["-e", "FAIRWAY_RANK"]
    podman = container_argv(runtime="/usr/bin/podman", **common)
    assert "nvidia.com/gpu=2" in podman and "nvidia.com/gpu=5" in podman
    assert "--gpus" not in podman


def test_a_start_sent_again_with_a_new_epoch_runs_once_and_takes_the_epoch(tmp_path):
    """The server sends a start it heard nothing of again, with a fresh epoch: the run
    does not start twice, and its reports carry the new epoch (the server ignores the
    replaced one's)."""
    runs = manager(tmp_path / "state")
    argv = pod("print('started')")
    runs.start(start_msg(1, 5, argv))
    again = runs.start(start_msg(1, 9, argv))
    assert again.epoch == 9 and runs.max_epoch == 9
    ended = wait_until_ended(runs, 1)
    assert ended.exit_code == 0 and ended.epoch == 9
    assert output(runs, 1) == "started\n"
    # An older epoch of the same run changes nothing.
    assert runs.start(start_msg(1, 7, argv)).epoch == 9
    # A new agent adopts the run with the epoch it took.
    assert manager(tmp_path / "state").runs["1"].status.epoch == 9


def test_a_shim_wakes_its_agent_when_its_command_starts_and_ends(tmp_path):
    """The agent learns of a start and an end from the wake pipe, not its next poll."""
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod("pass")))
    wait_for(lambda: (run_dir(runs, 1) / "exit.json").exists(), what="the run to end")
    assert runs.wake.drain()
    assert not runs.wake.drain()  # drained: nothing more until a shim writes again


def test_a_pod_started_through_the_fork_server_has_default_signal_handling(tmp_path):
    """The fork server ignores SIGINT and SIGCHLD for itself; a pod's command must not
    inherit that (it is started as from a fresh interpreter)."""
    code = (
        "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler,"
        " signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL)"
    )
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod(code)))
    assert wait_until_ended(runs, 1).exit_code == 0
    assert output(runs, 1) == "True True\n"
