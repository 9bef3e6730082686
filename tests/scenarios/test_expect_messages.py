"""What `simulate --check` says when a step's expectations do not hold: one readable
line per broken expectation, in the order the keys are documented."""

from __future__ import annotations

from scheduler_core.whatif.scenarios.expect import check_expect
from scheduler_core.whatif.scenarios.model import Expect
from scheduler_core.whatif.scenarios.runner import StepResult


def test_every_broken_expectation_gets_a_line_in_order() -> None:
    result = StepResult(
        step=0,
        at=0.0,
        workloads={
            "a": {"status": "pending", "reason": "no free GPUs", "pods": 0},
            "b": {"status": "running", "pods": 2},
        },
        queues={"team": {"gpu": {"allocated": {"gpus": 2.0}}}},
        events=[{"type": "preempted", "workload": "b"}],
    )
    expect = Expect(
        running=("a",),
        only=True,
        pods={"b": 3},
        preempted=("c",),
        allocated={"team": {"gpu": {"gpus": 4.0}}},
    )
    assert check_expect(expect, result, scenario=None) == [  # type: ignore[arg-type]
        "running: expected a running, it is pending (no free GPUs)",
        "running (only): not expected to run: b",
        "pods: expected b to run 3 pods, it runs 2",
        "preempted: expected but did not happen: c; happened but not expected: b",
        "allocated: team in pool gpu: expected gpus 4, got 2",
    ]


def test_expectations_that_hold_say_nothing() -> None:
    result = StepResult(step=0, at=0.0, workloads={"a": {"status": "running", "pods": 1}},
                        queues={}, events=[])  # fmt: skip
    assert check_expect(Expect(running=("a",), only=True, moved=()), result, scenario=None) == []  # type: ignore[arg-type]
