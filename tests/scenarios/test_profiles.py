"""A scenario file gets KAI's settings unless it names a profile."""

from __future__ import annotations

from scheduler_core.whatif.scenarios import load_scenario

BASE = """
nodes: [{name: n, gpus: 8}]
departments: [{name: d, quota: {default: {gpus: 8}}}]
projects: [{name: p, department: d, quota: {default: {gpus: 8}}}]
"""


def test_scenarios_are_kai_unless_they_name_the_lab_profile() -> None:
    (kai,) = load_scenario(BASE, source="kai.yaml").pools
    assert kai.reclaim_weighs_lost_work is False
    assert kai.max_preemptions_per_workload is None
    doc = BASE + "config: {profile: lab, reserve_for_gangs: false}\n"
    (lab,) = load_scenario(doc, source="lab.yaml").pools
    assert lab.reclaim_weighs_lost_work is True
    assert lab.max_preemptions_per_workload == 2
    assert lab.preemption_loop_evictions == 3
    assert lab.reserve_for_gangs is False  # stated beside the profile: it wins
