"""Pool settings and what-if changes: one set of rules, wherever a pool is described."""

from __future__ import annotations

import pytest

from scheduler_core.schemas.changes import Changes
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.schemas.pools import PoolChange, PoolSettings, ScenarioPool

BAD_SETTINGS = [
    ({"policy": "lottery"}, "policy", "must be one of quota, fairshare, priority"),
    ({"preemption": "yes"}, "preemption", "true or false"),
    ({"min_guaranteed_runtime": -1}, "min_guaranteed_runtime", "0 or more"),
    ({"max_consolidation_evaluations": 1.5}, "max_consolidation_evaluations", "whole number"),
    ({"max_reclaims_per_cycle": 0}, "max_reclaims_per_cycle", "at least 1"),
]


@pytest.mark.parametrize("model", [PoolSettings, ScenarioPool, PoolChange])
@pytest.mark.parametrize(("pool_settings", "field", "words"), BAD_SETTINGS)
def test_the_api_scenarios_and_changes_share_the_pool_rules(model, pool_settings, field, words):
    names = {PoolSettings: {}, ScenarioPool: {"name": "a"}, PoolChange: {"pool": "a"}}[model]
    with pytest.raises(SchemaInvalid) as caught:
        validate(model, {**names, **pool_settings})
    assert words in " ".join(caught.value.by_field()[field])


def test_null_lifts_a_pacing_bound_but_is_no_policy():
    assert validate(PoolSettings, {"max_reclaims_per_cycle": None}).given() == {
        "max_reclaims_per_cycle": None
    }
    with pytest.raises(SchemaInvalid):
        validate(PoolSettings, {"policy": None})


def test_a_pool_setting_it_does_not_know_is_refused():
    with pytest.raises(SchemaInvalid) as caught:
        validate(PoolSettings, {"colour": "blue"})
    assert caught.value.by_field() == {"colour": ["unknown key 'colour'"]}


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"quotas": [{"pool": "a", "gpus": 1}]}, "quotas[0]", "exactly one of project"),
        ({"quotas": [{"project": "p", "pool": "a"}]}, "quotas[0]", "change at least one"),
        ({"quotas": [{"project": "p", "pool": "a", "gpus": "4"}]}, "quotas[0].gpus", "number"),
        ({"add_nodes": [{"name": "n", "pool": "a", "gpus": 8, "count": 0}]},
         "add_nodes[0].count", "from 1 to 1000"),
        ({"remove_nodes": [7]}, "remove_nodes[0]", "node name"),
        ({"budget": 3}, "budget", "unknown change"),
    ],
)  # fmt: skip
def test_changes_shapes(changes, field, words):
    with pytest.raises(SchemaInvalid) as caught:
        validate(Changes, changes)
    assert words in " ".join(caught.value.by_field()[field])
