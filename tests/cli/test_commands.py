"""End to end: the `fairway` CLI in its own process against a live server."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest

from scheduler_core.loop.cycle import run_cycle
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests.cli.conftest import CLI_DIR, run_cli


def test_login_checks_the_token_and_stores_it_for_the_owner_only(
    live_server, alice_token, config_file
):
    login = run_cli(
        "login",
        "--url",
        live_server.url + "/",
        config=config_file,
        url=None,
        token=None,
        stdin=alice_token + "\n",
    )
    assert login.returncode == 0, login.stderr
    assert "as alice" in login.stdout
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert json.loads(config_file.read_text()) == {"url": live_server.url, "token": alice_token}

    # later commands need neither FAIRWAY_URL nor FAIRWAY_TOKEN
    listing = run_cli("list", config=config_file, url=None, token=None)
    assert listing.returncode == 0, listing.stderr
    assert "No unfinished workloads." in listing.stdout


def test_login_refuses_a_bad_token_and_stores_nothing(live_server, cluster, config_file):
    login = run_cli(
        "login",
        "--url",
        live_server.url,
        "--token",
        "fw_not-a-real-token",
        config=config_file,
        url=None,
        token=None,
    )
    assert login.returncode == 1
    assert "invalid or revoked token" in login.stderr
    assert len(login.stderr.strip().splitlines()) == 1
    assert not config_file.exists()


def test_submit_list_describe_cancel(fairway, cluster):
    big = fairway(
        "submit",
        "big",
        "--project",
        "vision",
        "--pool",
        "a100",
        "--pods",
        "2",
        "--gpus",
        "8",
        "--cpu",
        "4",
        "--memory",
        "16",
        "--image",
        "pytorch:2.3",
        "--env",
        "SEED=1",
        "--duration",
        "3600",
        "--",
        "python",
        "train.py",
        "--lr",
        "3e-4",
    )
    assert big.returncode == 0, big.stderr
    assert "Submitted workload" in big.stdout and "vision/big" in big.stdout
    assert "pending" in big.stdout
    small = fairway("submit", "small", "--project", "vision", "--gpus", "1", "--json")
    assert small.returncode == 0, small.stderr
    small_id = json.loads(small.stdout)["id"]

    run_cycle()  # the big gang takes both nodes; the small one waits behind it

    listing = fairway("list")
    assert listing.returncode == 0, listing.stderr
    header, *rows = listing.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "PROJECT", "STATUS", "GPUS", "POOL", "AGE", "REASON"]
    by_name = {row.split()[1]: row.split() for row in rows}
    assert by_name["big"][2:6] == ["vision", "running", "16", "a100"]
    assert by_name["small"][2:6] == ["vision", "pending", "1", "any"]

    running = fairway("describe", "vision/big")
    assert running.returncode == 0, running.stderr
    assert "Status:" in running.stdout and "running" in running.stdout
    assert "Command:" in running.stdout and "python train.py --lr 3e-4" in running.stdout
    assert "gpu-1" in running.stdout and "gpu-2" in running.stdout
    assert "0,1,2,3,4,5,6,7" in running.stdout  # every device of each node
    assert re.search(r"^Preemptions: +0$", running.stdout, re.MULTILINE)

    waiting = fairway("describe", "small", "--json")
    assert waiting.returncode == 0, waiting.stderr
    detail = json.loads(waiting.stdout)
    assert detail["status"] == "pending" and detail["queue_position"] == 1
    assert detail["pending_reason"]
    assert [e["type"] for e in detail["events"]][-1] == "submitted"
    text = fairway("describe", str(small_id)).stdout
    fields = dict(line.split(":", 1) for line in text.splitlines()[:12] if ":" in line)
    assert fields["Pending reason"].strip() == detail["pending_reason"]
    assert fields["Queue position"].strip() == "1 in vision"
    assert "project vision would exceed its fair share" in detail["pending_reason"]

    cancelled = fairway("cancel", "small")
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"Cancelled workload {small_id}" in cancelled.stdout

    names = [w["name"] for w in json.loads(fairway("list", "--json").stdout)]
    assert names == ["big"]
    everything = json.loads(fairway("list", "--all", "--json").stdout)
    assert {w["name"]: w["status"] for w in everything} == {
        "big": "running",
        "small": "cancelled",
    }


def test_refusals_show_the_api_message_and_exit_1(fairway, cluster):
    unknown = fairway("submit", "x", "--project", "no-such-project", "--gpus", "1")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("fairway: error: project:")
    assert "no-such-project" in unknown.stderr

    too_many = fairway("submit", "x", "--project", "vision", "--gpus=-1")
    assert too_many.returncode == 1
    assert "gpus" in too_many.stderr

    other_project = fairway("submit", "x", "--project", "nlp", "--gpus", "1")
    assert other_project.returncode == 1
    assert "cannot submit workloads to project nlp" in other_project.stderr

    missing = fairway("describe", "424242")
    assert missing.returncode == 1
    assert "no workload '424242' that you can see" in missing.stderr

    again = fairway("cancel", "424242", "nope")
    assert again.returncode == 1
    assert len(again.stderr.strip().splitlines()) == 2

    bad_token = fairway("list", token="fw_revoked")
    assert bad_token.returncode == 1
    assert "invalid or revoked token" in bad_token.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("submit", "x", "--project", "vision", "--env", "NOEQUALS"),
        ("submit", "x", "--project", "vision", "--gpus", "lots"),
        ("list", "--", "echo"),
        (),
    ],
)
def test_usage_errors_exit_2(args, config_file):
    result = run_cli(*args, config=config_file, url="http://127.0.0.1:9", token="fw_x")
    assert result.returncode == 2, result.stderr


def test_an_unreachable_server_or_no_login_exits_3(config_file, closed_port):
    down = run_cli("list", config=config_file, url=f"http://127.0.0.1:{closed_port}", token="fw_x")
    assert down.returncode == 3
    assert f"cannot reach the server at http://127.0.0.1:{closed_port}" in down.stderr

    nobody = run_cli("list", config=config_file, url=None, token=None)
    assert nobody.returncode == 3
    assert "fairway login" in nobody.stderr


def test_top_once_shows_my_unfinished_workloads(fairway, cluster):
    for name, user, project in [
        ("mine", cluster["researcher"], cluster["vision"]),
        ("theirs", cluster["nlp_researcher"], cluster["nlp"]),
    ]:
        workload_submit(user=user, request=WorkloadRequest(project=project, name=name, gpus=1))
    run_cycle()

    top = fairway("top", "--once")
    assert top.returncode == 0, top.stderr
    assert "alice's workloads" in top.stdout
    assert "1 running (1 GPUs), 0 pending, 0 suspended" in top.stdout
    assert "mine" in top.stdout and "theirs" not in top.stdout
    assert "\033" not in top.stdout  # no screen clearing when printing once

    as_json = fairway("top", "--json")
    assert [w["name"] for w in json.loads(as_json.stdout)] == ["mine"]


def test_version_and_help_with_examples(config_file):
    version = run_cli("--version", config=config_file, url=None, token=None)
    assert version.returncode == 0
    assert version.stdout.startswith("fairway 0.")
    for command in ((), ("submit",), ("logs",)):
        help_text = run_cli(*command, "--help", config=config_file, url=None, token=None)
        assert help_text.returncode == 0
        assert "examples:" in help_text.stdout


def test_the_cli_imports_no_django(config_file):
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, fairway_cli.main; "
            "sys.exit(any(m.split('.')[0] in {'django', 'scheduler_core', 'api'} "
            "for m in sys.modules))",
        ],
        env={**os.environ, "PYTHONPATH": str(CLI_DIR)},
        cwd=config_file.parent.parent,
        timeout=60,
    )
    assert check.returncode == 0


def test_every_submission_option_reaches_the_api(fairway, cluster, tmp_path):
    full = fairway(
        "submit", "full", "--project", "vision", "--pool", "a100", "--kind", "interactive",
        "--priority", "120", "--preemptible", "--pods", "2", "--min-pods", "1", "--gpus", "0.5",
        "--cpu", "4", "--memory", "32", "--node-selector", "zone=eu", "--weight", "2",
        "--backoff-limit", "3", "--image", "pytorch:2", "--env", "SEED=1", "--env", "A=b=c",
        "--duration", "600", "--checkpoint-every", "60", "--json", "--", "python", "-u", "t.py",
    )  # fmt: skip
    assert full.returncode == 0, full.stderr
    sent = json.loads(full.stdout)
    assert {k: sent[k] for k in ("kind", "priority", "preemptible", "pods", "min_pods")} == {
        "kind": "interactive",
        "priority": 120,
        "preemptible": True,
        "pods": 2,
        "min_pods": 1,
    }
    assert (sent["gpus"], sent["cpu"], sent["memory"], sent["weight"]) == (0.5, 4, 32, 2)
    assert (sent["pools"], sent["node_selector"], sent["backoff_limit"]) == (
        ["a100"],
        {"zone": "eu"},
        3,
    )
    assert sent["spec"] == {
        "image": "pytorch:2",
        "command": ["python", "-u", "t.py"],
        "env": {"SEED": "1", "A": "b=c"},
        "duration": 600,
        "checkpoint_every": 60,
    }

    groups = tmp_path / "groups.yaml"
    groups.write_text(
        "groups:\n  - {name: launcher, pods: 1, cpu: 2}\n  - {name: workers, pods: 2, gpus: 2}\n"
    )
    gang = fairway("submit", "ddp", "--project", "vision", "--groups-file", str(groups), "--json")
    assert gang.returncode == 0, gang.stderr
    assert [(g["name"], g["pods"]) for g in json.loads(gang.stdout)["groups"]] == [
        ("launcher", 1),
        ("workers", 2),
    ]
    both = fairway(
        "submit", "x", "--project", "vision", "--groups-file", str(groups), "--gpus", "1"
    )
    assert both.returncode == 1
    assert "gpus: belongs to each group when groups is given" in both.stderr
