"""Replaying a trace and summarising a scenario run, end to end through the commands."""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scheduler_core.whatif.replay import BACKFILL, ENGINE, FIFO
from tests.factories import TRACE_CSV

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("FAIRWAY_SHARED_DIR", HERE.parents[2] / "shared"))
TRACES = SHARED / "traces"
OUR_SCENARIOS = HERE.parent / "scenarios" / "files"

TRACE = TRACE_CSV  # team a fills the cluster first; team b's gang arrives later


def replay(tmp_path: Path, *extra: str) -> tuple[dict, str]:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    vc = tmp_path / "vc.csv"
    vc.write_text("vc,node num\na,30\nb,30\n")
    out, err = StringIO(), StringIO()
    call_command(
        "replay_trace",
        str(trace),
        "--start",
        "2017-10-25T19:00",
        "--hours",
        "2",
        "--nodes",
        "4",
        "--vc",
        str(vc),
        *extra,
        stdout=out,
        stderr=err,
    )
    return out.getvalue(), err.getvalue()


def test_replay_compares_the_engine_with_fifo_and_backfill(tmp_path: Path) -> None:
    out, err = replay(tmp_path, "--json", "--profile", "kai")
    document = json.loads(out)
    assert document["jobs"] == 6  # the job at 23:00 is outside the two hours
    assert document["quotas"] == {"a": 16.0, "b": 16.0}
    runs = document["runs"]
    assert set(runs) == {ENGINE, FIFO, BACKFILL}
    # FIFO: the gang waits for two of a's jobs (2 h), the 1-GPU job waits behind it
    fifo = runs[FIFO]
    assert fifo["completed"] == 6
    assert fifo["makespan_hours"] == 2.5
    assert fifo["mean_queueing_minutes"][">8"] == 110
    assert fifo["preemptions"] == fifo["moves"] == 0
    # backfill cannot run the 1-GPU job beside a's four without delaying the gang
    assert runs[BACKFILL]["mean_queueing_minutes"]["1"] == fifo["mean_queueing_minutes"]["1"]
    # KAI's engine reclaims for b, which is under its quota: b starts at once, a loses work
    engine = runs[ENGINE]
    assert engine["completed"] == 6
    assert engine["mean_queueing_minutes"][">8"] == 0
    assert engine["preemptions"] >= 1
    assert engine["lost_gpu_hours"] > 0
    assert engine["fairness_deviation"] < fifo["fairness_deviation"]
    assert "h simulated" in err


def test_replay_prints_a_table_by_default(tmp_path: Path) -> None:
    out, _ = replay(tmp_path)
    lines = out.splitlines()
    # 4 x 8 GPUs x 2 h + 16 x 0.5 h + 10 min = 72.2 GPU-hours over 32 GPUs x 2 h
    assert lines[0] == (
        '6 jobs on 4 nodes x 8 GPUs (offered load 1.13), a cycle every 60 s; profile="lab"'
    )
    assert lines[1].split() == [ENGINE, FIFO, BACKFILL]
    assert any(line.startswith("lost GPU-h (% of work)") for line in lines)


def test_pool_settings_change_the_engine_s_replay_only(tmp_path: Path) -> None:
    # b's gang arrives 10 min after a filled the cluster; weighing lost work, b's 10 min
    # of waiting (2.7 GPU-hours) does not pay for a's 2 x 8 GPUs x 10 min (2.7 GPU-hours)
    # at once, but b's wait grows while a's loss grows as fast only in 8 of its 16 GPUs
    out, _ = replay(
        tmp_path,
        *("--json", "--only", ENGINE, "--profile", "kai"),
        *("--config", "reclaim_weighs_lost_work=true"),
    )
    document = json.loads(out)
    assert set(document["runs"]) == {ENGINE}
    assert document["config"] == {"profile": "kai", "reclaim_weighs_lost_work": True}
    weighed = document["runs"][ENGINE]
    kai = json.loads(replay(tmp_path, "--json", "--only", ENGINE, "--profile", "kai")[0])
    kai = kai["runs"][ENGINE]
    # the lab profile (the default) weighs lost work too
    lab = json.loads(replay(tmp_path, "--json", "--only", ENGINE)[0])["runs"][ENGINE]
    assert lab["lost_gpu_hours"] < kai["lost_gpu_hours"]
    assert weighed["lost_gpu_hours"] < kai["lost_gpu_hours"]
    assert weighed["mean_queueing_minutes"][">8"] > kai["mean_queueing_minutes"][">8"]


def test_consecutive_windows_replay_side_by_side(tmp_path: Path) -> None:
    # two 2-hour windows: 19:00-21:00 holds the six jobs, 21:00-23:00 none
    out, _ = replay(tmp_path, "--only", ENGINE, "--windows", "2")
    lines = out.splitlines()
    assert lines[0].startswith("2017-10-25 19:00: 6 jobs on 4 nodes")
    assert lines[1].startswith("2017-10-25 21:00: 0 jobs on 4 nodes")
    assert lines[2].split() == [ENGINE, "10-25", "19:00", ENGINE, "10-25", "21:00"]
    document = json.loads(replay(tmp_path, "--only", ENGINE, "--windows", "2", "--json")[0])
    assert [w["start"] for w in document["windows"]] == [
        "2017-10-25T19:00:00+00:00",
        "2017-10-25T21:00:00+00:00",
    ]
    assert [w["jobs"] for w in document["windows"]] == [6, 0]


def test_slices_of_other_days_replay_side_by_side_at_the_same_offered_load(
    tmp_path: Path,
) -> None:
    # a second start, the next day, holds one 8-GPU hour; --load sizes each slice's
    # cluster: 72.2 GPU-hours over 2 h at load 1.13 is 4 nodes, 8 GPU-hours 1 node
    trace = tmp_path / "days.csv"
    trace.write_text(TRACE + "2017-10-26 19:30:00,3600,8,0,b\n")
    out = StringIO()
    call_command(
        "replay_trace",
        str(trace),
        *("--start", "2017-10-25T19:00", "--start", "2017-10-26T19:00"),
        *("--hours", "2", "--load", "1.13", "--only", ENGINE, "--json"),
        stdout=out,
        stderr=StringIO(),
    )
    windows = json.loads(out.getvalue())["windows"]
    assert [w["jobs"] for w in windows] == [6, 1]
    assert [w["cluster"]["nodes"] for w in windows] == [4, 1]
    assert [w["offered_load"] for w in windows] == [1.128, 0.5]
    assert [w["runs"][ENGINE]["completed"] for w in windows] == [6, 1]


def test_the_cluster_size_is_checked(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--load must be greater than 0"):
        call_command(
            "replay_trace",
            str(tmp_path / "x.csv"),
            "--start",
            "2017-10-25T19:00",
            "--hours",
            "2",
            "--load",
            "0",
        )
    with pytest.raises(CommandError, match="--hours must be greater than 0"):
        replay(tmp_path, "--hours", "0")
    with pytest.raises(CommandError, match="--gpus-per-node must be at least 1"):
        replay(tmp_path, "--gpus-per-node", "0")


def test_a_bad_pool_setting_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"bad --config: .*no_such_setting"):
        replay(tmp_path, "--only", ENGINE, "--config", "no_such_setting=1")
    with pytest.raises(CommandError, match="expected KEY=VALUE"):
        replay(tmp_path, "--config", "reclaim_weighs_lost_work")


def test_summary_prints_a_scenario_s_figures_instead_of_its_steps() -> None:
    out = StringIO()
    call_command(
        "simulate", str(OUR_SCENARIOS / "preempt-within-queue.yaml"), "--summary", stdout=out
    )
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [ENGINE]
    preemptions = next(line for line in lines if line.startswith("preemptions"))
    assert preemptions.split()[-1] != "0"


@pytest.mark.skipif(not (TRACES / "philly.csv").is_file(), reason="../shared/traces not found")
def test_an_hour_of_the_philly_trace_replays(tmp_path: Path) -> None:
    out = StringIO()
    call_command(
        "replay_trace",
        str(TRACES / "philly.csv"),
        "--start",
        "2017-10-25T19:00",
        "--hours",
        "1",
        "--nodes",
        "48",
        "--vc",
        str(TRACES / "philly_vc.csv"),
        "--json",
        stdout=out,
        stderr=StringIO(),
    )
    runs = json.loads(out.getvalue())["runs"]
    for figures in runs.values():
        assert figures["unfinished"] == 0
        assert figures["completed"] == runs[FIFO]["completed"] > 0
