"""A pod's ports: the node gives each named port a free port of its own, tells the pod in
its environment, keeps them across an agent restart and reports them with `running`."""

from __future__ import annotations

import json
import socket

from fairway_agent import protocol
from fairway_agent.containers import container_argv

from tests.agent.helpers import WAIT_FOR_GO, manager, pod, run_dir, start_msg, wait_for

PRINT_PORTS_THEN_WAIT = (
    """
import json, os
print(json.dumps({k: v for k, v in os.environ.items() if k.startswith("FAIRWAY_PORT")}), flush=True)
"""
    + WAIT_FOR_GO  # a pod that ended at once could be seen exited, never running
)
SERVE_THEN_WAIT = (
    """
import os, socket
s = socket.socket(); s.bind(("", int(os.environ["FAIRWAY_PORT_WEB"]))); s.listen()
"""
    + WAIT_FOR_GO
)


def running(runs, run):
    def check():
        runs.poll()
        status = runs.runs[str(run)].status
        return status if status.state == protocol.RUN_RUNNING else None

    return wait_for(check, what=f"run {run} to run")


def test_each_port_gets_a_free_port_in_the_pods_environment(tmp_path):
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod(PRINT_PORTS_THEN_WAIT), ports=["web", "tensor-board"]))
    status = running(runs, 1)
    ports = status.ports or {}
    assert sorted(ports) == ["tensor-board", "web"] and len(set(ports.values())) == 2
    assert status.message()["ports"] == ports  # reported with `running`
    wait_for(lambda: (run_dir(runs, 1) / "output.log").read_text(), what="its output")
    env = json.loads((run_dir(runs, 1) / "output.log").read_text())
    assert env["FAIRWAY_PORT_WEB"] == str(ports["web"])
    assert env["FAIRWAY_PORT_TENSOR_BOARD"] == str(ports["tensor-board"])
    assert env["FAIRWAY_PORT"] == str(ports["web"])
    assert env["FAIRWAY_PORTS"] == f"web={ports['web']},tensor-board={ports['tensor-board']}"
    (run_dir(runs, 1) / "work/go").touch()


def test_ports_of_live_runs_are_not_given_again_and_survive_an_agent_restart(tmp_path):
    runs = manager(tmp_path / "state")
    runs.start(start_msg(1, 1, pod(SERVE_THEN_WAIT), ports=["web"]))
    first = running(runs, 1).ports or {}
    runs.start(start_msg(2, 2, pod(SERVE_THEN_WAIT), ports=["web"]))
    second = running(runs, 2).ports or {}
    assert first["web"] != second["web"]
    wait_for(lambda: _listening(first["web"]), what="the pod to listen where it was told")
    again = manager(tmp_path / "state")  # the agent restarts: it adopts its runs
    assert again.runs["1"].status.ports == first
    for run in (1, 2):
        (run_dir(runs, run) / "work/go").touch()


def _listening(port: int) -> bool:
    """Whether something accepts connections on the port (a pod binds a moment after it
    is reported running)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return False
    return True


def test_bad_port_names_fail_the_start_and_say_why(tmp_path):
    runs = manager(tmp_path / "state")
    bad = runs.start(start_msg(1, 1, pod("pass"), ports=["Web"]))
    assert (bad.state, bad.reason) == (protocol.RUN_START_FAILED, "bad port name: 'Web'")
    many = runs.start(start_msg(2, 2, pod("pass"), ports=[f"p{i}" for i in range(9)]))
    assert many.reason == "ports must be a list of at most 8 names"


def test_a_containers_ports_are_published_at_the_same_numbers():
    argv = container_argv(runtime="docker", run="7", image="jupyter", command=None, env={},
                          gpus=[], mounts=[], workdir=None, user=None, ports=[41234])  # fmt: skip
    assert argv[argv.index("-p") + 1] == "41234:41234"
