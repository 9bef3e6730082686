"""Nesting bounds of parsed documents: deep ones are refused before anything walks them."""

from __future__ import annotations

import json

import pytest
import yaml

from scheduler_core.whatif.scenarios.nesting import NestingTooDeep, check_depth, parse_bounded


def nested(depth: int) -> list:
    data: list = []
    for _ in range(depth - 1):
        data = [data]
    return data


def test_depth_up_to_the_limit_passes_and_one_more_is_refused():
    check_depth(nested(32))
    check_depth({"a": [{"b": "scalar"}]}, limit=3)
    with pytest.raises(NestingTooDeep, match="more than 32 levels"):
        check_depth(nested(33))


def test_shared_containers_cost_little_and_a_self_containing_one_is_refused():
    layer: list = ["x"]
    for _ in range(30):
        layer = [layer, layer]  # 2**30 paths to the bottom, 31 containers
    check_depth(layer)
    looping: list = []
    looping.append(looping)
    with pytest.raises(NestingTooDeep):
        check_depth(looping)


def test_a_parser_that_runs_out_of_stack_is_refused_too():
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(NestingTooDeep):
        parse_bounded(lambda: json.loads(text))
    with pytest.raises(NestingTooDeep):
        parse_bounded(lambda: yaml.safe_load(text))
    assert parse_bounded(lambda: yaml.safe_load("a: [1, {b: 2}]")) == {"a": [1, {"b": 2}]}
