"""Malformed scenarios: a clear error naming file, entry and field; exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_core.whatif.scenarios import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[2]

BASE = """
pools: [{name: default}]
nodes: [{name: n1, gpus: 8}, {name: rack, count: 2, gpus: 4}]
departments: [{name: org, quota: {default: {gpus: 8}}}]
projects: [{name: p, department: org}]
workloads:
  - {name: w1, project: p, cpu: 1}
  - {name: w2, project: p, cpu: 1}
  - {name: w3, project: p, cpu: 1}
  - {name: w4, project: p, gpus: 1}
steps:
  - at: 0
"""


def _error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(text, source="scenario.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, gpus: two}",
            "scenario.yaml: workloads[3] (name 'w4'): 'gpus' must be a number >= 0, got 'two'",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: q, cpu: 1}",
            "scenario.yaml: workloads[3] (name 'w4'): 'project' names unknown project 'q'",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w1, project: p, cpu: 1}",
            "scenario.yaml: workloads[3] (name 'w1'): duplicate workload name 'w1'",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, gpu: 1}",
            "scenario.yaml: workloads[3] (name 'w4'): unknown key 'gpu'",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, pools: [h100], cpu: 1}",
            "'pools' names unknown pool 'h100'",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, running_on: [n9], cpu: 1}",
            "'running_on' names unknown node 'n9'",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, gpus: 9, running_on: [n1]}",
            "more GPUs on node 'n1' than it has",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, pods: 2, min_pods: 3, cpu: 1}",
            "'min_pods' (3) must not exceed 'pods' (2)",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, gpus: 1.5}",
            "'gpus' must be a whole number or a fraction below 1",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, kind: batch, cpu: 1}",
            "'kind' must be one of training, interactive, inference, cpu, got 'batch'",
        ),
        (
            "{name: n1, gpus: 8}",
            "{name: rack-1, gpus: 8}",
            "nodes[1] (name 'rack'): duplicate node name 'rack-1'",
        ),
        (
            "{name: n1, gpus: 8}",
            "{name: n1, gpus: 8, pool: other}",
            "nodes[0] (name 'n1'): 'pool' names unknown pool 'other'",
        ),
        (
            "projects: [{name: p, department: org}]",
            "projects: [{name: p, department: nope}]",
            "projects[0] (name 'p'): 'department' names unknown department 'nope'",
        ),
        (
            "  - at: 0\n",
            "  - at: 5\n  - at: 1\n",
            "steps[1] (at 1): steps must be in increasing time order; 'at' 1 comes after 5",
        ),
        (
            "  - at: 0\n",
            "  - at: 0\n    events: [{finish: w9}]\n",
            "steps[0] (at 0) events[0] (finish): names unknown workload 'w9'",
        ),
        ("  - at: 0\n", "  - at: 0\n    events: [{explode: w1}]\n", "unknown event 'explode'"),
        (
            "  - at: 0\n",
            "  - at: 0\n    expect: {running: [zz]}\n",
            "steps[0] (at 0) expect: 'running' names unknown workload 'zz'",
        ),
        ("  - at: 0\n", "  - at: 0\n    expect: {runing: [w1]}\n", "unknown key 'runing'"),
        (
            "pools: [{name: default}]",
            "pools: [{name: default, policy: fifo}]",
            "pools[0] (name 'default'): 'policy' must be one of quota, fairshare, priority, "
            "got 'fifo'",
        ),
        (
            "pools: [{name: default}]",
            "pools: [{name: default}]\nsurprise: 1",
            "scenario.yaml: unknown key 'surprise'",
        ),
    ],
)
def test_malformed_scenarios_name_file_entry_and_field(old: str, new: str, message: str) -> None:
    assert old in BASE
    assert message in _error(BASE.replace(old, new, 1))


def test_bad_yaml_names_the_line() -> None:
    assert _error("pools: [\n  - {name: x\n").startswith("scenario.yaml: cannot parse at line")


def test_the_base_scenario_is_valid_and_expands_counts() -> None:
    scenario = load_scenario(BASE, source="scenario.yaml")
    assert [n.name for n in scenario.nodes] == ["n1", "rack-1", "rack-2"]
    kinds = {w.id: (w.priority, w.preemptible) for w in scenario.workloads}
    assert kinds["w1"] == (50, True)


def test_kind_defaults_and_pool_inheritance() -> None:
    scenario = load_scenario(
        """
config: {preemption: false, min_guaranteed_runtime: 30}
pools: [{name: a}, {name: b, preemption: true}]
nodes: [{name: n, pool: b, gpus: 1}]
departments: [{name: d}]
projects: [{name: p, department: d}]
workloads:
  - {name: nb, project: p, kind: interactive, cpu: 1}
  - {name: inf, project: p, kind: inference, cpu: 1}
  - {name: urgent, project: p, priority: 100, cpu: 1}
""",
        source="s.yaml",
    )
    assert [(p.name, p.preemption, p.min_guaranteed_runtime) for p in scenario.pools] == [
        ("a", False, 30),
        ("b", True, 30),
    ]
    got = {w.id: (w.priority, w.preemptible) for w in scenario.workloads}
    assert got == {"nb": (100, False), "inf": (125, False), "urgent": (100, False)}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "simulate", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_command_exits_2_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "scenario.yaml"
    bad.write_text(BASE.replace("gpus: 1}", "gpus: two}"))
    done = _run(str(bad), "--check")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert (
        "scenario.yaml: workloads[3] (name 'w4'): 'gpus' must be a number >= 0, got 'two'"
        in done.stderr
    )
    missing = _run(str(tmp_path / "nope.yaml"), "--json")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "{name: rack, count: 2, gpus: 4}",
            "{name: rack, count: 4000000, gpus: 4}",
            "nodes[1] (name 'rack'): 'count' must be at most 10000, got 4000000",
        ),
        (
            "{name: rack, count: 2, gpus: 4}",
            "{name: rack, count: 9000, gpus: 4}, {name: more, count: 1000, gpus: 4}",
            "nodes[2] (name 'more'): brings the nodes to 10001; a scenario has at most 10000 nodes",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, gpus: 0.000000001}",
            "workloads[3] (name 'w4'): 'gpus' must be 0 or at least 0.01 GPUs, got 1e-09",
        ),
        (
            "{name: w4, project: p, gpus: 1}",
            "{name: w4, project: p, pods: 100, gpus: 0}",
            "workloads[3] (name 'w4'): 'gpus' is 0 and so are 'cpu' and 'memory'",
        ),
    ],
)
def test_sizes_are_bounded(old: str, new: str, message: str) -> None:
    assert old in BASE
    assert message in _error(BASE.replace(old, new, 1))


def test_pods_and_steps_are_bounded_in_all() -> None:
    many = "".join(
        f"      - submit: {{name: s{i}, project: p, pods: 4096, cpu: 1}}\n" for i in range(245)
    )
    text = BASE.replace("  - at: 0\n", f"  - at: 0\n    events:\n{many}")
    assert (
        "steps[0] (at 0) events[244] (submit): brings the pods to 1003524; a scenario has at "
        "most 1000000 pods" in _error(text)
    )
    steps = "".join(f"  - at: {i}\n" for i in range(10_001))
    assert "'steps' must list at most 10000" in _error(BASE.replace("  - at: 0\n", steps))


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ("{set_quota: {project: p}}", "events[0] (set_quota): give at least one of gpus, cpu"),
        ("{set_quota: {project: p, pool: gpu, gpus: 2}}", "'pool' names unknown pool 'gpu'"),
        ("{set_weight: {workload: w1}}", "events[0] (set_weight): 'weight' is required"),
        (
            "{set_weight: {workload: w1, weight: 2, over_quota_weight: 1}}",
            "a workload's set_weight gives only 'workload' and 'weight'",
        ),
        ("{set_weight: {project: p}}", "'over_quota_weight' is required"),
        (
            "{set_weight: {project: p, weight: 2, over_quota_weight: 1}}",
            "'weight' is a workload's; a queue's set_weight gives 'over_quota_weight'",
        ),
    ],
)
def test_a_quota_or_weight_change_that_cannot_apply_says_why(event: str, message: str) -> None:
    text = BASE.replace("  - at: 0\n", f"  - at: 0\n    events: [{event}]\n")
    assert message in _error(text)


def test_a_quota_and_weight_change_load_as_events() -> None:
    text = BASE.replace(
        "  - at: 0\n",
        "  - at: 0\n    events: [{set_quota: {project: p, gpus: 2}}, "
        "{set_weight: {workload: w1, weight: 3}}, {set_weight: {project: p, "
        "over_quota_weight: 2}}]\n",
    )
    events = load_scenario(text, source="scenario.yaml").steps[0].events
    assert [(e.type, e.values) for e in events] == [
        ("set_quota", {"pool": "default", "amounts": {"gpus": 2}}),
        ("set_weight", {"weight": 3, "scope": "workload"}),
        ("set_weight", {"over_quota_weight": 2, "scope": "queue"}),
    ]
