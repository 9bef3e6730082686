"""The `changes` of a what-if: checked against the copy, applied to it, described in words."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from scheduler_core.whatif.changes import apply_changes, describe_changes, validate_changes
from scheduler_core.whatif.runner import run_whatif, step_seconds_for

SCENARIO = {
    "name": "copy",
    "pools": [{"name": "a100", "policy": "quota"}],
    "nodes": [{"name": f"gpu-{i}", "pool": "a100", "gpus": 8} for i in (1, 2)],
    "departments": [{"name": "research", "quota": {"a100": {"gpus": 16}}}],
    "projects": [
        {"name": "vision", "department": "research", "quota": {"a100": {"gpus": 8}},
         "limit": {"a100": {"gpus": 12}}},
        {"name": "nlp", "department": "research", "quota": {"a100": {"gpus": 8}}},
    ],
    "workloads": [
        {"name": f"vision/w{i}", "project": "vision", "gpus": 4, "running_on": [node]}
        for i, node in enumerate(["gpu-1", "gpu-1", "gpu-2"])
    ],
    "steps": [],
}  # fmt: skip


def test_every_kind_of_change_is_applied_to_a_copy():
    changes = validate_changes(
        {
            "quotas": [{"project": "vision", "pool": "a100", "gpus": 4, "limit_gpus": None}],
            "weights": [{"project": "nlp", "over_quota_weight": 3, "rank": 1}],
            "pools": [{"pool": "a100", "policy": "fairshare", "consolidation": False}],
            "add_nodes": [{"name": "new", "pool": "a100", "gpus": 8, "count": 2}],
            "remove_nodes": ["gpu-2"],
        },
        scenario=SCENARIO,
    )
    changed = apply_changes(SCENARIO, changes)
    vision, nlp = changed["projects"]
    assert vision["quota"] == {"a100": {"gpus": 4}}
    assert vision["limit"] == {"a100": {}}
    assert (nlp["over_quota_weight"], nlp["rank"]) == (3, 1)
    assert changed["pools"][0] == {"name": "a100", "policy": "fairshare", "consolidation": False}
    assert [n["name"] for n in changed["nodes"]] == ["gpu-1", "gpu-2", "new-1", "new-2"]
    assert changed["steps"][0] == {"at": 0, "events": [{"node_down": "gpu-2"}]}
    assert SCENARIO["projects"][0]["quota"] == {"a100": {"gpus": 8}}  # the original is untouched
    assert describe_changes(changes, scenario=SCENARIO) == [
        "vision in a100: gpus 8 -> 4",
        "vision in a100: limit gpus 12 -> none",
        "nlp: over quota weight 1 -> 3",
        "nlp: rank 0 -> 1",
        "pool a100: policy quota -> fairshare",
        "pool a100: consolidation on -> off",
        "add new-1 .. new-2 to a100 (8 GPUs each)",
        "remove node gpu-2",
    ]


def test_a_profile_change_sets_every_setting_of_the_profile_and_says_which():
    changes = validate_changes(
        {"pools": [{"pool": "a100", "profile": "lab", "reserve_for_gangs": False}]},
        scenario=SCENARIO,
    )
    (pool,) = apply_changes(SCENARIO, changes)["pools"]
    assert (pool["reclaim_weighs_lost_work"], pool["max_preemptions_per_workload"]) == (True, 2)
    assert pool["reserve_for_gangs"] is False  # stated beside the profile: it wins
    lines = describe_changes(changes, scenario=SCENARIO)
    assert lines[0] == "pool a100: profile lab"
    assert "pool a100: max preemptions per workload none -> 2" in lines
    assert "pool a100: reserve for gangs off -> off" in lines


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ("more gpus", "changes", "must be an object"),
        ({"quotas": {"project": "vision"}}, "changes.quotas", "must be a list"),
        ({"quotas": [{"pool": "a100", "gpus": 1}]}, "changes.quotas[0]", "exactly one of"),
        ({"quotas": [{"project": "vision", "gpus": 1}]}, "changes.quotas[0].pool", "required"),
        ({"quotas": [{"project": "vision", "pool": "a100"}]}, "changes.quotas[0]", "at least one"),
        (
            {"quotas": [{"project": "vision", "pool": "a100", "gpus": 6, "limit_gpus": 5}]},
            "changes.quotas[0].limit_gpus",
            "at least the deserved quota (6)",
        ),
        ({"weights": [{"project": "nlp", "rank": 1.5}]}, "changes.weights[0].rank", "whole"),
        ({"pools": [{"pool": "h100", "policy": "quota"}]}, "changes.pools[0].pool", "no pool"),
        ({"pools": [{"pool": "a100", "preemption": "no"}]}, "changes.pools[0].preemption", "true"),
        ({"add_nodes": [{"name": "New!", "pool": "a100", "gpus": 8}]}, "changes.add_nodes[0].name", "lowercase"),  # noqa: E501
        ({"add_nodes": [{"name": "n", "pool": "a100", "gpus": 1.5}]}, "changes.add_nodes[0].gpus", "whole"),  # noqa: E501
        ({"add_nodes": [{"name": "n", "pool": "a100", "gpus": 8, "count": 0}]}, "changes.add_nodes[0].count", "from 1"),  # noqa: E501
        (
            {"add_nodes": [{"name": "n", "pool": "a100", "gpus": 8, "count": 2},
                           {"name": "n-2", "pool": "a100", "gpus": 8}]},
            "changes.add_nodes[1].name",
            "already exists",
        ),
        ({"remove_nodes": [7]}, "changes.remove_nodes[0]", "node name"),
        (
            {"add_nodes": [{"name": f"x{i}", "pool": "a100", "gpus": 8, "count": 600}
                           for i in range(2)]},
            "changes.add_nodes[1]",
            "brings the added nodes to 1200; a what-if run has at most 1000 added nodes",
        ),
        ({"remove_nodes": ["gpu-1"] * 1001}, "changes.remove_nodes", "at most 1000"),
    ],
)  # fmt: skip
def test_bad_changes_are_refused_with_the_field_and_the_reason(changes, field, words):
    with pytest.raises(ValidationError) as caught:
        validate_changes(changes, scenario=SCENARIO)
    assert words in " ".join(caught.value.message_dict[field])


def test_removing_a_node_evicts_its_pods_and_shrinks_capacity():
    changes = validate_changes({"remove_nodes": ["gpu-2"]}, scenario=SCENARIO)
    progress = []
    result = run_whatif(
        scenario=SCENARIO,
        changes=changes,
        horizon=600,
        on_progress=lambda fraction, message: progress.append(fraction),
    )
    baseline, changed = result["runs"]["baseline"], result["runs"]["changed"]
    assert baseline["cluster"]["capacity_gpus"] == 16
    assert changed["cluster"]["capacity_gpus"] == 8
    assert changed["projects"]["vision"]["preemptions"] == 1
    assert changed["projects"]["vision"]["final_gpus"] == 8
    reclaimed = result["comparison"]["reclaimed"]
    assert reclaimed[0]["project"] == "vision"
    assert "1 more preemption" in reclaimed[0]["text"]
    assert progress == sorted(progress)
    assert progress[-1] == 1


@pytest.mark.parametrize(
    ("horizon", "interval"), [(60, 1), (600, 10), (3600, 60), (86400, 1800), (2592000, 43200)]
)
def test_the_horizon_is_cut_into_readable_steps(horizon, interval):
    assert step_seconds_for(horizon) == interval
