"""The workload shape: bounds, strict types, unknown keys, and the kind defaults that every
surface shares."""

from __future__ import annotations

import pytest

from scheduler_core.schemas.base import MAX_PODS
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.schemas.kinds import kind_defaults
from scheduler_core.schemas.workloads import WorkloadSubmission


def problems_of(data: dict) -> dict[str, list[str]]:
    with pytest.raises(SchemaInvalid) as caught:
        validate(WorkloadSubmission, data)
    return caught.value.by_field()


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"pods": 0}, "pods", "at least 1"),
        ({"pods": MAX_PODS + 1, "gpus": 1}, "pods", f"at most {MAX_PODS}"),
        (
            {"groups": [{"pods": MAX_PODS, "gpus": 1}, {"pods": 1, "cpu": 1}]},
            "groups",
            f"have {MAX_PODS + 1} pods in all; a workload has at most {MAX_PODS}",
        ),
        ({"gpus": 1e-9}, "gpus", "must be 0 or at least 0.01 GPUs, got 1e-09"),
        ({"cpu": 1e-9}, "cpu", "must be 0 or at least 0.001 CPU cores"),
        ({"pods": 10}, "gpus", "a pod must ask for GPUs, CPU or memory"),
        ({"pods": 10, "gpus": 0}, "gpus", "a pod must ask for GPUs, CPU or memory"),
        ({"groups": [{"gpus": 1}, {"pods": 2}]}, "groups[1].gpus", "must ask for GPUs"),
        ({"gpus": -1}, "gpus", "0 or more"),
        ({"gpus": 1025}, "gpus", "at most 1024"),
        ({"gpus": 1.5}, "gpus", "a fraction below 1"),
        ({"weight": 0}, "weight", "above 0"),
        ({"priority": 10**7}, "priority", "at most 1000000"),
        ({"backoff_limit": -1}, "backoff_limit", "0 or more"),
        ({"spec": {"duration": 0}}, "spec.duration", "above 0"),
        ({"pods": 2, "min_pods": 3}, "min_pods", "(3) must not exceed pods (2)"),
        ({"groups": [{"pods": 1, "min_pods": 2}]}, "groups[0].min_pods", "must not exceed"),
        ({"groups": []}, "groups", "at least one group"),
        ({"kind": "cpu", "gpus": 1}, "gpus", "CPU-only"),
        ({"gpus": 1, "groups": [{"pods": 1, "gpus": 1}]}, "gpus", "not both"),
    ],
)
def test_bounds_and_rules_name_the_field(data, field, words):
    assert words in " ".join(problems_of(data)[field])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pods", "3"),
        ("pods", True),
        ("pods", 1.5),
        ("gpus", "1"),
        ("gpus", False),
        ("gpus", float("nan")),
        ("preemptible", 1),
        ("preemptible", "yes"),
        ("kind", 1),
        ("node_selector", {"zone": 1}),
        ("pods", None),
    ],
)
def test_values_are_never_coerced(field, value):
    assert any(f.startswith(field) for f in problems_of({field: value}))


def test_a_whole_number_may_be_written_with_a_fraction_of_zero():
    assert validate(WorkloadSubmission, {"pods": 2.0, "gpus": 1}).pods == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"gpu": 1}, "gpu"),
        ({"groups": [{"pods": 1, "shoe": 1}]}, "groups[0]"),
        ({"spec": {"whatever": 1}}, "spec"),
    ],
)
def test_unknown_keys_are_refused(data, field):
    assert any("unknown key" in m for m in problems_of(data)[field])


def test_every_problem_is_reported_at_once():
    errors = problems_of(
        {
            "weight": -1,
            "groups": [{"name": "w", "pods": 2, "min_pods": 5}, {"name": "w", "pods": 1}],
        }
    )
    assert {"weight", "groups[0].min_pods", "groups[1].name"} <= set(errors)


def test_groups_are_named_and_gangs_stated():
    flat = validate(WorkloadSubmission, {"pods": 4, "gpus": 1})
    assert [(g.name, g.pods, g.min_pods) for g in flat.pod_groups()] == [("main", 4, 4)]
    multi = validate(
        WorkloadSubmission,
        {"groups": [{"pods": 2, "min_pods": 1, "gpus": 1}, {"pods": 1, "cpu": 1}]},
    )
    assert [(g.name, g.min_pods) for g in multi.pod_groups()] == [("group-1", 1), ("group-2", 1)]


@pytest.mark.parametrize(
    ("kind", "priority", "preemptible", "expected"),
    [
        ("training", None, None, (50, True)),
        ("cpu", None, None, (50, True)),
        ("interactive", None, None, (100, False)),
        ("inference", None, None, (125, False)),
        ("interactive", 50, None, (50, False)),  # FORMAT.md: preemptible only training and cpu
        ("training", 100, None, (100, False)),  # priority >= 100 is not preemptible
        ("training", 120, True, (120, True)),  # what a submission states wins
    ],
)
def test_kind_defaults(kind, priority, preemptible, expected):
    assert kind_defaults(kind, priority=priority, preemptible=preemptible) == expected


@pytest.mark.parametrize(
    ("ports", "field", "words"),
    [
        ([], "spec.ports", "must list at least 1"),
        ([{"name": f"p{i}"} for i in range(9)], "spec.ports", "must list at most 8"),
        ([{"name": "lab"}, {"name": "lab"}], "spec.ports", "port name 'lab' is used twice"),
        ([{"name": "Lab"}], "spec.ports[0].name", "lowercase letters"),
        ([{"name": "9lab"}], "spec.ports[0].name", "lowercase letters"),
        ([{"name": "lab_1"}], "spec.ports[0].name", "lowercase letters"),
        ([{"name": "a" * 16}], "spec.ports[0].name", "at most 15"),
        ([{"name": ""}], "spec.ports[0].name", "must not be empty"),
        ([{"name": "lab", "protocol": "tcp"}], "spec.ports[0].protocol", "one of http"),
        ([{"name": "lab", "port": 8888}], "spec.ports[0]", "unknown key 'port'"),
        ([{"protocol": "http"}], "spec.ports[0].name", "required"),
        (["lab"], "spec.ports[0]", "object"),
        ("lab", "spec.ports", "must be a list"),
    ],
)
def test_bad_port_declarations_name_the_port(ports, field, words):
    problems = problems_of({"gpus": 1, "spec": {"ports": ports}})
    assert words in " ".join(problems[field]), problems


def test_ports_are_names_each_pod_serves_over_http():
    spec = validate(WorkloadSubmission, {"gpus": 1, "spec": {"ports": [{"name": "lab"},
                    {"name": "tb-2", "protocol": "http"}]}}).spec  # fmt: skip
    assert [(p.name, p.protocol) for p in spec.ports or []] == [("lab", "http"), ("tb-2", "http")]
