"""Real execution end to end: the product, three `fairway-agent` processes with two fake GPUs
each, and real commands. What a researcher sees through the API: where the pods ran, what
they printed, how they ended."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import psycopg
import pytest

from benchmarks.agent_stack import AgentStack, wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow]


def pod_texts(stack: AgentStack, pk: int) -> dict[str, str]:
    return {p["pod"]: p["text"] for p in stack.logs(pk)["pods"]}


def pod_node(stack: AgentStack, pk: int) -> str:
    """The node of the workload's newest run."""
    return str(stack.logs(pk)["pods"][0]["node"])


def assert_no_device_held_twice(stack: AgentStack) -> None:
    """No two runs on one node ever held a device at the same time (the product's own
    records of when each process started and ended, read from its database)."""
    with psycopg.connect(stack.env["DATABASE_URL"]) as conn:
        rows = conn.execute(
            "select node_id, gpu_devices, started_at, coalesce(ended_at, now()) "
            "from scheduler_core_podrun where started_at is not null"
        ).fetchall()
    for i, (node, devices, start, end) in enumerate(rows):
        for other, devices2, start2, end2 in rows[i + 1 :]:
            shared = set(devices) & set(devices2)
            if node == other and shared and start < end2 and start2 < end:
                raise AssertionError(f"device {shared} of node {node} held by two runs")


def wait_nodes_ready(stack: AgentStack, count: int) -> None:
    def ready() -> bool:
        status, data = stack.request("GET", "/api/v1/nodes/?pool=gpu", token=stack.admin_token)
        rows = data["results"] if isinstance(data, dict) and "results" in data else data
        return status == 200 and sum(1 for n in rows if n["state"] == "ready") >= count

    wait_for(ready, 90, f"{count} agent nodes to register")


def test_pods_on_one_node_see_disjoint_gpus_and_logs_arrive_complete(stack):
    wait_nodes_ready(stack, 3)
    script = 'echo "gpus=$CUDA_VISIBLE_DEVICES"; sleep 2'
    ids = [stack.submit(f"gpu-{i}", script, gpus=1)["id"] for i in range(6)]
    lines = "for i in $(seq 1 3000); do echo line-$i; done"
    chatty = stack.submit("chatty", lines, gpus=0, cpu=0.1)["id"]
    for pk in ids:
        stack.wait_status(pk, "completed", timeout=90)
    stack.wait_status(chatty, "completed", timeout=90)

    seen: dict[str, set[str]] = {}
    for pk in ids:
        text = pod_texts(stack, pk)["main-0"]
        gpus = re.search(r"gpus=(\S+)", text)
        assert gpus is not None, text
        node = seen.setdefault(pod_node(stack, pk), set())
        assert gpus.group(1) not in node, f"device {gpus.group(1)} given twice on one node"
        node.add(gpus.group(1))
    assert len(seen) == 3 and all(len(devices) == 2 for devices in seen.values())
    expected = [f"line-{i}" for i in range(1, 3001)]
    assert pod_texts(stack, chatty)["main-0"].splitlines() == expected
    # the researcher's CLI reads the same output
    cli = subprocess.run(
        [sys.executable, "-m", "fairway_cli", "logs", str(chatty)],
        env={**os.environ, "FAIRWAY_URL": stack.url, "FAIRWAY_TOKEN": stack.token},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines() == expected


def test_a_gangs_pods_see_each_other(stack):
    wait_nodes_ready(stack, 3)
    script = (
        'echo "rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT peers=$FAIRWAY_PEERS"'
    )
    pk = stack.submit("gang", script, gpus=2, pods=3, min_pods=3)["id"]
    stack.wait_status(pk, "completed", timeout=90)
    texts = pod_texts(stack, pk)
    assert len(texts) == 3
    ranks = sorted(int(re.search(r"rank=(\d+)", t).group(1)) for t in texts.values())
    assert ranks == [0, 1, 2]
    peers = {re.search(r"peers=(\S+)", t).group(1) for t in texts.values()}
    assert len(peers) == 1 and len(peers.pop().split(",")) == 3  # everyone, the same list
    assert all("world=3" in t for t in texts.values())


def test_exit_codes_map_to_completed_and_failed_and_the_backoff_limit_holds(stack):
    wait_nodes_ready(stack, 3)
    ok = stack.submit("exit-zero", "exit 0", gpus=1)["id"]
    bad = stack.submit("exit-three", "echo trying; exit 3", gpus=1, backoff_limit=1)["id"]
    missing = stack.submit("no-such", ["no-such-command-fairway"], gpus=1, backoff_limit=0)["id"]
    stack.wait_status(ok, "completed", timeout=60)
    failed = stack.wait_status(bad, "failed", timeout=90)
    assert failed["restarts"] == 1
    assert "exited with code 3; restarted once, backoff limit 1 used up" in failure(stack, bad)
    # failure is failure: each attempt a failed run with its exit code, never a preemption
    attempts = events(stack, bad, "run_failed")
    assert [e["details"]["exit_code"] for e in attempts] == [3, 3]
    assert events(stack, bad, "preempted") == [] and failed["preemptions"] == 0
    assert events(stack, ok, "running"), "the running report is pushed as an event"
    stack.wait_status(missing, "failed", timeout=60)
    assert "could not start: " in failure(stack, missing)
    assert "no-such-command-fairway" in failure(stack, missing)
    # an image on nodes without a container runtime waits, and says why
    boxed = stack.submit("boxed", "true", gpus=1, spec={"image": "busybox"})["id"]
    waiting = stack.wait_status(boxed, "pending", timeout=30)
    wait_for(
        lambda: "containers" in stack.workload(boxed)["pending_reason"],
        30, f"a reason: {stack.workload(boxed)}",
    )  # fmt: skip
    assert waiting["restarts"] == 0
    stack.request("POST", f"/api/v1/workloads/{boxed}/cancel/")


def events(stack: AgentStack, pk: int, type: str) -> list[dict]:
    """The workload's events of one type."""
    _, data = stack.request("GET", f"/api/v1/events/?workload={pk}&type={type}")
    return data["results"] if isinstance(data, dict) else data


def failure(stack: AgentStack, pk: int) -> str:
    """The reason of the workload's `failed` event."""
    _, data = stack.request("GET", f"/api/v1/events/?workload={pk}&type=failed")
    rows = data["results"] if isinstance(data, dict) else data
    return " | ".join(row["reason"] for row in rows)


def cancel_all(stack: AgentStack) -> None:
    """Cancel every workload still holding GPUs."""
    for status in ("starting", "running"):
        _, data = stack.request("GET", f"/api/v1/workloads/?status={status}&page_size=200")
        rows = data["results"] if isinstance(data, dict) else data
        for row in rows:
            stack.request("POST", f"/api/v1/workloads/{row['id']}/cancel/")


TRAPS_TERM = (
    'ck="$FAIRWAY_CHECKPOINT_DIR/step"; '
    '[ -f "$ck" ] && echo "resumed from step $(cat "$ck")"; '
    "trap 'echo got TERM, saving; echo 42 > \"$ck\"; exit 0' TERM; "
    "echo started; while true; do sleep 0.2; done"
)
IGNORES_TERM = "trap '' TERM; echo started; while true; do sleep 0.2; done"


def test_a_reclaim_stops_runs_with_sigterm_then_sigkill_and_they_resume_later(stack):
    wait_nodes_ready(stack, 3)
    cancel_all(stack)
    # team (quota 2): 2 GPUs within quota that cannot be preempted, 4 over it that can
    filler = stack.submit("filler", "sleep 600", gpus=2, preemptible=False)["id"]
    stack.wait_status(filler, "running", timeout=60)
    saver = stack.submit("saver", TRAPS_TERM, gpus=2)["id"]
    stubborn = stack.submit("stubborn", IGNORES_TERM, gpus=2)["id"]
    for pk in (saver, stubborn):
        stack.wait_status(pk, "running", timeout=60)
        wait_for(lambda pk=pk: "started" in pod_texts(stack, pk).get("main-0", ""), 30, "start")
    # other (quota 4) claims its quota: both over-quota runs of team must go
    claim = stack.submit("claim", "sleep 600", project="other", gpus=2, pods=2, min_pods=2)
    stack.wait_status(claim["id"], "running", timeout=60)
    for pk in (saver, stubborn):
        assert stack.workload(pk)["status"] == "pending"
    saved = stack.logs(saver)["pods"][0]
    assert "got TERM, saving" in saved["text"]
    assert saved["exit_code"] == 0
    killed = stack.logs(stubborn)["pods"][0]
    assert killed["exit_code"] is None or killed["exit_code"] < 0 or killed["exit_code"] == 137
    # once the claim is gone, both run again; the one that checkpointed resumes
    stack.request("POST", f"/api/v1/workloads/{claim['id']}/cancel/")
    stack.wait_status(saver, "running", timeout=60)
    wait_for(
        lambda: "resumed from step 42" in pod_texts(stack, saver).get("main-0", ""),
        30, f"the saver to resume from its checkpoint: {stack.logs(saver)}",
    )  # fmt: skip
    cancel_all(stack)
    assert_no_device_held_twice(stack)


def test_a_killed_agent_loses_its_node_and_its_runs_run_once_elsewhere(stack):
    wait_nodes_ready(stack, 3)
    cancel_all(stack)
    lock = stack.var_dir / "once.lock"  # held while a run of `once` runs
    lock.touch()
    lock.chmod(0o666)
    script = f"flock -n {lock} -c 'echo got-lock; sleep 600' || echo RAN-TWICE"
    pk = stack.submit("once", script, gpus=1)["id"]
    running = stack.wait_status(pk, "running", timeout=60)
    wait_for(lambda: "got-lock" in pod_texts(stack, pk).get("main-0", ""), 30, "the lock")
    node = running["nodes"][0]
    stack.agents[node].process.kill()  # kill -9: its pods are left behind, fenced by the shim

    def node_state() -> str:
        _status, data = stack.request("GET", f"/api/v1/nodes/?name={node}", token=stack.admin_token)
        rows = data["results"] if isinstance(data, dict) else data
        return next(n["state"] for n in rows if n["name"] == node)

    wait_for(lambda: node_state() == "unreachable", 30, f"{node} to be unreachable")
    wait_for(lambda: node_state() == "down", 60, f"{node} to be down")
    again = stack.wait_status(pk, "running", timeout=60)
    assert again["nodes"][0] != node
    assert again["restarts"] >= 1
    wait_for(lambda: "got-lock" in pod_texts(stack, pk).get("main-0", ""), 30, "the new run")
    assert "RAN-TWICE" not in pod_texts(stack, pk)["main-0"]
    # the agent comes back: its node is ready again and holds nothing of that workload
    stack.start_agent(node, gpus=2)
    wait_for(lambda: node_state() == "ready", 60, f"{node} to be ready again")
    cancel_all(stack)
    assert_no_device_held_twice(stack)
