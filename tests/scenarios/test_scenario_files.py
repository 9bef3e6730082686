"""Every seed scenario and every scenario of ours passes `simulate --check`."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from scheduler_core.whatif.scenarios import load_scenario, run_scenario

HERE = Path(__file__).resolve().parent
SEEDS = HERE.parents[2] / "shared" / "scenarios" / "seeds"
OURS = HERE / "files"


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.json"))


def test_the_seed_folder_exists_and_is_not_empty() -> None:
    # fail (not skip) when the contract's seeds cannot be found
    assert SEEDS.is_dir(), f"seed scenarios not found at {SEEDS}"
    assert _files(SEEDS)


@pytest.mark.parametrize("path", _files(SEEDS) if SEEDS.is_dir() else [], ids=lambda p: p.stem)
def test_seed_passes(path: Path) -> None:
    results = run_scenario(load_scenario(path))
    failures = [f"step {r.step}: {line}" for r in results for line in r.failures]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("path", _files(OURS), ids=lambda p: p.stem)
def test_our_scenario_passes(path: Path) -> None:
    results = run_scenario(load_scenario(path))
    failures = [f"step {r.step}: {line}" for r in results for line in r.failures]
    assert not failures, "\n".join(failures)


def test_check_command_prints_a_summary() -> None:
    out = StringIO()
    call_command("simulate", str(OURS / "spread-placement.yaml"), "--check", stdout=out)
    assert out.getvalue().startswith("ok spread-placement")


def test_check_command_exits_1_with_a_readable_diff(tmp_path: Path) -> None:
    text = (
        (OURS / "spread-placement.yaml")
        .read_text()
        .replace("only: true", "only: true, pending: [a]")
    )
    bad = tmp_path / "wrong.yaml"
    bad.write_text(text)
    out = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("simulate", str(bad), "--check", stdout=out)
    assert exit_info.value.code == 1
    assert "pending: expected a pending, it is running" in out.getvalue()


def test_json_command_prints_one_object_per_step() -> None:
    out = StringIO()
    call_command("simulate", str(SEEDS / "elastic-shrink-expand.yaml"), "--json", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2]
    second = lines[1]
    assert second["workloads"]["urgent"] == {"status": "running", "pods": 4, "nodes": ["n1"] * 4}
    assert {e["type"] for e in second["events"]} >= {"submitted", "allocated", "shrunk"}
    assert second["queues"]["p"]["default"]["allocated"]["gpus"] == 8


def test_on_step_reports_progress() -> None:
    seen: list[int] = []
    run_scenario(
        load_scenario(SEEDS / "gang-all-or-nothing.yaml"), on_step=lambda r: seen.append(r.step)
    )
    assert seen == [0, 1]


def test_json_says_why_a_running_elastic_workload_does_not_grow() -> None:
    out = StringIO()
    call_command("simulate", str(SEEDS / "elastic-shrink-expand.yaml"), "--json", stdout=out)
    second = json.loads(out.getvalue().splitlines()[1])
    assert second["workloads"]["elastic"]["reason"] == (
        "running 4 of 8 pods; its next pod waits: workload needs 1 GPUs on one pool; "
        "pool default has 0 free"
    )
