"""Every seed scenario and every scenario of ours passes `simulate --check`.

The seed scenarios live outside this repository, in ../shared/scenarios/seeds (another
folder with FAIRWAY_SHARED_DIR). A clone without them skips their tests; CI (the CI
variable set) fails instead, so the contract's seeds are never silently left out.
"""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import environ
import pytest
from django.core.management import call_command

from scheduler_core.whatif.scenarios import load_scenario, run_scenario

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("FAIRWAY_SHARED_DIR", HERE.parents[2] / "shared"))
SEEDS = SHARED / "scenarios" / "seeds"
OURS = HERE / "files"


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.json"))


@pytest.fixture
def seeds() -> Path:
    """The seed folder; skips the test when it is missing, or fails it on CI."""
    if not SEEDS.is_dir():
        if environ.Env().bool("CI", default=False):
            pytest.fail(
                f"seed scenarios not found at {SEEDS}: CI must run them (check out ../shared "
                "next to the repository or point FAIRWAY_SHARED_DIR at it)"
            )
        pytest.skip("../shared/scenarios/seeds not found: seed scenarios skipped")
    return SEEDS


def _seed_params() -> list[object]:
    """One test per seed file; without the folder, one test that says why there are none."""
    if SEEDS.is_dir():
        return [pytest.param(path, id=path.stem) for path in _files(SEEDS)]
    return [pytest.param(None, id="missing")]


def test_the_seed_folder_exists_and_is_not_empty(seeds: Path) -> None:
    assert _files(seeds)


@pytest.mark.parametrize("path", _seed_params())
def test_seed_passes(seeds: Path, path: Path) -> None:
    run = run_scenario(load_scenario(path))
    failures = [f"step {f.step}: {f.line}" for f in run.failures]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("path", _files(OURS), ids=lambda p: p.stem)
def test_our_scenario_passes(path: Path) -> None:
    run = run_scenario(load_scenario(path))
    failures = [f"step {f.step}: {f.line}" for f in run.failures]
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


def test_json_command_prints_one_object_per_step(seeds: Path) -> None:
    out = StringIO()
    call_command("simulate", str(seeds / "elastic-shrink-expand.yaml"), "--json", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2]
    second = lines[1]
    assert second["workloads"]["urgent"] == {"status": "running", "pods": 4, "nodes": ["n1"] * 4}
    assert {e["type"] for e in second["events"]} >= {"submitted", "allocated", "shrunk"}
    assert second["queues"]["p"]["default"]["allocated"]["gpus"] == 8


def test_on_step_reports_progress(seeds: Path) -> None:
    seen: list[int] = []
    run_scenario(
        load_scenario(seeds / "gang-all-or-nothing.yaml"), on_step=lambda r: seen.append(r.step)
    )
    assert seen == [0, 1]


def test_json_says_why_a_running_elastic_workload_does_not_grow(seeds: Path) -> None:
    out = StringIO()
    call_command("simulate", str(seeds / "elastic-shrink-expand.yaml"), "--json", stdout=out)
    second = json.loads(out.getvalue().splitlines()[1])
    assert second["workloads"]["elastic"]["reason"].startswith(
        "runs 4 of its 8 pods and does not grow: "
    )
    assert "reason" not in second["workloads"]["urgent"]
