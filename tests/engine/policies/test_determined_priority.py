"""Determined's priority policy: the GPU pass and the zero-GPU pass follow the same
rules (each case runs once with GPU workloads and once with CPU-only ones), and each
pass is blind to the other. Cluster in, placements, evictions and reasons out."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from scheduler_core.engine import Evict, PoolConfig, WorkloadSpec
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload

QUEUES = [dept("lab"), project("team", "lab")]


def sized(name: str, size: float, resource: str, **kw: object) -> WorkloadSpec:
    """A one-pod workload asking `size` of `resource` (GPUs, or CPU cores and no GPU)."""
    if resource == "gpus":
        return workload(name, project="team", gpus=size, **kw)
    return workload(name, project="team", gpus=0, cpu=size, **kw)


@dataclass
class Case:
    id: str
    preemption: bool
    # (name, size, priority, preemptible, running)
    workloads: list[tuple[str, float, int, bool, bool]]
    runs: set[str]
    evicted: set[str] = field(default_factory=set)
    # workload -> (reason kind, a fragment of its reason)
    waits: dict[str, tuple[str, str]] = field(default_factory=dict)


CASES = [
    Case(
        "preemption evicts a lower-priority preemptible workload to make room",
        preemption=True,
        workloads=[("low", 4, 10, True, True), ("high", 2, 90, True, False)],
        runs={"high"},
        evicted={"low"},
        waits={"low": ("capacity", "")},
    ),
    Case(
        "the lowest priority goes first, and only as much as needed",
        preemption=True,
        workloads=[
            ("p20", 2, 20, True, True),
            ("p10", 2, 10, True, True),
            ("high", 2, 90, True, False),
        ],
        runs={"high", "p20"},
        evicted={"p10"},
    ),
    Case(
        "a non-preemptible workload is never evicted",
        preemption=True,
        workloads=[("keep", 4, 10, False, True), ("high", 2, 90, True, False)],
        runs={"keep"},
        waits={"high": ("capacity", "")},
    ),
    Case(
        "equal priority never preempts",
        preemption=True,
        workloads=[("first", 4, 50, True, True), ("peer", 2, 50, True, False)],
        runs={"first"},
        waits={"peer": ("capacity", "")},
    ),
    Case(
        "without preemption nothing lower starts while a higher-priority workload waits",
        preemption=False,
        workloads=[
            ("hold", 2, 10, True, True),
            ("high", 4, 90, True, False),
            ("low", 1, 20, True, False),
        ],
        runs={"hold"},
        waits={
            "high": ("capacity", ""),
            "low": ("priority", "waiting behind higher-priority workload high (priority 90)"),
        },
    ),
    Case(
        "without preemption an equal-priority workload that fits still starts",
        preemption=False,
        workloads=[
            ("hold", 2, 10, True, True),
            ("big", 4, 50, True, False),
            ("small", 1, 50, True, False),
        ],
        runs={"hold", "small"},
    ),
    Case(
        "with preemption a lower-priority preemptible workload is backfilled, a "
        "non-preemptible one waits",
        preemption=True,
        workloads=[
            ("keep", 1, 10, False, True),
            ("high", 4, 90, True, False),
            ("fill", 2, 50, True, False),
            ("notebook", 1, 50, False, False),
        ],
        runs={"keep", "fill"},
        waits={"high": ("capacity", ""), "notebook": ("priority", "high")},
    ),
]


@pytest.mark.parametrize("resource", ["gpus", "cpu"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_priority_policy(case: Case, resource: str) -> None:
    specs = [
        sized(
            name,
            size,
            resource,
            priority=priority,
            preemptible=preemptible,
            running_on=["n1"] if is_running else (),
        )
        for name, size, priority, preemptible, is_running in case.workloads
    ]
    snap = snapshot(
        [node("n1", 4, cpu=4.0)],
        QUEUES,
        specs,
        pools=[PoolConfig(name="default", policy="priority", preemption=case.preemption)],
    )
    final, results = settle(snap)
    evictions = [d for r in results for d in r.decisions if isinstance(d, Evict)]
    assert set(running(final)) == case.runs
    assert {d.workload for d in evictions} == case.evicted
    assert all(d.reason_kind == "priority" for d in evictions)
    pending = results[-1].pending
    for name, (kind, fragment) in case.waits.items():
        assert pending[name].reason_kind == kind
        assert fragment in pending[name].reason


@pytest.mark.parametrize(("waits", "starts"), [("gpus", "cpu"), ("cpu", "gpus")])
def test_one_pass_does_not_hold_back_the_other(waits: str, starts: str) -> None:
    # without preemption, a more important workload of one kind that does not fit
    # holds back only less important workloads of its own kind
    snap = snapshot(
        [node("n1", 4, cpu=4.0)],
        QUEUES,
        [sized("high", 8, waits, priority=90), sized("low", 2, starts, priority=20)],
        pools=[PoolConfig(name="default", policy="priority", preemption=False)],
    )
    final, results = settle(snap)
    assert set(running(final)) == {"low"}
    assert results[-1].pending["high"].reason_kind == "capacity"


def test_a_preempting_gpu_workload_takes_only_gpu_workloads() -> None:
    # a CPU-only job holds every core; a more important GPU job that needs one waits
    snap = snapshot(
        [node("n1", 4, cpu=4.0)],
        QUEUES,
        [
            workload("cpu-job", project="team", gpus=0, cpu=4, priority=10, running_on=["n1"]),
            workload("gpu-job", project="team", gpus=1, cpu=1, priority=90),
        ],
        pools=[PoolConfig(name="default", policy="priority", preemption=True)],
    )
    final, results = settle(snap)
    assert set(running(final)) == {"cpu-job"}
    assert not any(isinstance(d, Evict) for r in results for d in r.decisions)
    assert results[-1].pending["gpu-job"].reason_kind == "capacity"
