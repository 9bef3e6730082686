"""`fairway whatif`: an admin replays a job trace and plays a scenario from the terminal,
follows the run's progress while a worker runs it, and reads the figures; researchers and
bad options are refused with the API's own words."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connections

from scheduler_core.models import Simulation
from scheduler_core.services.simulations import simulation_run
from scheduler_core.services.tokens import token_create
from tests import factories
from tests.factories import TINY_SCENARIO, TRACE_CSV

WORKER_DELAY = 1.5  # seconds before the worker picks a run up: the CLI shows it waiting


@pytest.fixture
def admin_token(cluster) -> str:
    return token_create(user=cluster["admin"], name="cli")[1]


@pytest.fixture
def slow_worker(monkeypatch):
    """A worker (a thread of the server's process) that picks each run up after a while."""
    threads: list[threading.Thread] = []

    def work(pk: int) -> None:
        try:
            time.sleep(WORKER_DELAY)
            simulation_run(simulation_id=pk)
        finally:
            connections.close_all()

    def enqueue(pk: int) -> None:
        thread = threading.Thread(target=work, args=(pk,))
        threads.append(thread)
        thread.start()

    monkeypatch.setattr("scheduler_core.services.simulations._enqueue", enqueue)
    yield
    for thread in threads:
        thread.join(60)


@pytest.fixture
def no_worker(monkeypatch):
    """Runs wait for a worker until the test plays it."""
    monkeypatch.setattr("scheduler_core.services.simulations._enqueue", lambda pk: None)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "day.csv").write_text(TRACE_CSV)
    (tmp_path / "vc.csv").write_text("vc,node num\na,1\nb,1\n")
    (tmp_path / "tiny.yaml").write_text(TINY_SCENARIO)
    return tmp_path


def test_an_admin_replays_a_trace_and_reads_the_figures_side_by_side(
    fairway, admin_token, files, slow_worker
):
    done = fairway(
        "whatif",
        "trace",
        str(files / "day.csv"),
        "--start",
        "2017-10-25T19:00",
        "--hours",
        "2",
        "--nodes",
        "4",
        "--team-nodes",
        str(files / "vc.csv"),
        "--config",
        "reserve_for_gangs=true",
        "--config",
        "fairshare_mode=time_based",
        token=admin_token,
    )
    assert done.returncode == 0, done.stderr
    # progress while it waited, then the figures as replay_trace prints them
    assert "waiting for a worker" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("What-if run ") and lines[0].endswith(
        "(day 2017-10-25T19:00): succeeded"
    )
    assert "6 jobs on 4 nodes x 8 GPUs" in done.stdout
    assert lines[3].split() == ["FIGURE", "FAIRWAY", "FIFO", "FIFO+BACKFILL"]
    completed = next(line for line in lines if line.startswith("jobs completed"))
    assert completed.split()[-9:] == ["6", "/", "0"] * 3
    run = Simulation.objects.get()
    # the options went through as given: team sizes read from the file, settings typed,
    # in the lab profile (a trace run's default)
    assert run.trace_options["team_nodes"] == {"a": 1, "b": 1}
    assert run.trace_options["config"] == {
        "profile": "lab",
        "reserve_for_gangs": True,
        "fairshare_mode": "time_based",
    }

    # the same run, later, as JSON: the API's object with its figures
    shown = fairway("whatif", "show", str(run.pk), "--json", token=admin_token)
    assert shown.returncode == 0, shown.stderr
    body = json.loads(shown.stdout)
    assert body["status"] == "succeeded"
    assert body["figures"]["schedulers"] == ["fairway", "fifo", "fifo+backfill"]


def test_a_scenario_run_left_to_its_worker_then_shown_and_listed(
    fairway, admin_token, files, no_worker
):
    started = fairway(
        "whatif", "scenario", str(files / "tiny.yaml"), "--horizon", "600", "--no-wait",
        token=admin_token,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    run = Simulation.objects.get()
    assert started.stdout.strip() == f"Started what-if run {run.pk} (tiny): queued"

    waiting = fairway("whatif", "show", str(run.pk), token=admin_token)
    assert waiting.stdout.strip() == (
        f"What-if run {run.pk} (tiny): queued, 0%: waiting for a worker"
    )
    simulation_run(simulation_id=run.pk)  # the worker
    shown = fairway("whatif", "show", str(run.pk), "--wait", token=admin_token)
    assert shown.returncode == 0, shown.stderr
    assert "Baseline run:" in shown.stdout
    project = next(line for line in shown.stdout.splitlines() if line.startswith("p "))
    assert project.split()[1:3] == ["4.0", "4"]  # mean and peak GPUs held by project p

    listed = fairway("whatif", "list", token=admin_token)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:4] == [
        str(run.pk),
        "tiny",
        "scenario",
        "succeeded",
    ]


def test_refusals_name_what_is_wrong_and_exit_1(fairway, admin_token, files):
    # a researcher may not start what-if runs
    mine = fairway("whatif", "scenario", str(files / "tiny.yaml"))
    assert mine.returncode == 1
    assert mine.stderr.startswith("fairway: error: ")
    # an option the server refuses, named as the API names it
    empty = fairway(
        "whatif", "trace", str(files / "day.csv"), "--start", "2019-01-01T00:00", "--nodes", "4",
        token=admin_token,
    )  # fmt: skip
    assert empty.returncode == 1
    assert "trace.start" in empty.stderr and "no job of the trace" in empty.stderr
    # a file that is not there never reaches the server
    missing = fairway(
        "whatif", "trace", str(files / "nope.csv"), "--start", "2017-10-25T19:00", "--nodes", "4",
        token=admin_token,
    )  # fmt: skip
    assert missing.returncode == 2
    assert "cannot read the trace" in missing.stderr
    assert not Simulation.objects.exists()


def test_a_failed_run_exits_1_with_its_reason(fairway, admin_token, files, no_worker):
    started = fairway(
        "whatif", "scenario", str(files / "tiny.yaml"), "--no-wait", token=admin_token
    )
    run = Simulation.objects.get()
    assert started.returncode == 0
    # the run fails as a worker would report it
    Simulation.objects.filter(pk=run.pk).update(status="failed", error="the worker was lost")
    shown = fairway("whatif", "show", str(run.pk), "--wait", token=admin_token)
    assert shown.returncode == 1
    assert f"what-if run {run.pk} failed: the worker was lost" in shown.stderr


def test_changes_tried_on_a_copy_of_the_live_cluster(
    fairway, admin_token, cluster, tmp_path, slow_worker
):
    gpu1, gpu2 = cluster["nodes"]
    for i in range(7):  # vision holds 14 of 16 GPUs, 6 over its quota; nlp waits
        factories.running_workload(
            cluster["vision"], [gpu1 if i < 4 else gpu2], name=f"train-{i}", gpus=2
        )
    for i in range(4):
        factories.workload(cluster["nlp"], f"tune-{i}", gpus=2)
    changes = tmp_path / "cut.json"
    changes.write_text(json.dumps({"quotas": [{"project": "vision", "pool": "a100", "gpus": 4}]}))

    done = fairway(
        "whatif", "live", "--changes", str(changes), "--horizon", "600", token=admin_token
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(live: cut): succeeded" in out.splitlines()[0]
    assert "Changes: vision in a100: gpus 8 -> 4" in out
    assert "Baseline run:" in out and "Changed run:" in out
    assert Simulation.objects.get().source == "live"

    # a change the server refuses is named as the API names it
    changes.write_text(json.dumps({"quotas": [{"project": "vision", "pool": "a100", "gpus": -1}]}))
    bad = fairway("whatif", "live", "--changes", str(changes), token=admin_token)
    assert bad.returncode == 1
    assert "changes.quotas[0].gpus" in bad.stderr
