"""Determined's fair-share policy: the division of a pool's slots (numbers out), and
workloads that can never fit taking no part in it (placements and reasons out)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import pytest

from scheduler_core.engine import ClusterSnapshot, NodeSpec, PoolConfig, WorkloadSpec
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import WorkloadState
from scheduler_core.engine.plugins.proportion.division import ShareClaim, divide
from scheduler_core.engine.policies.determined_fairshare import counts_for_share, fair_targets
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload

QUEUES = [dept("lab"), project("team", "lab")]
POOLS = [PoolConfig(name="default", policy="fairshare")]


def job(name: str, pods: int = 1, min_pods: int | None = None, **kw: object) -> WorkloadSpec:
    """A workload of project team (GPU workloads of one pod group)."""
    return workload(name, project="team", pods=pods, min_pods=min_pods, **kw)


def cluster(nodes: list[NodeSpec], workloads: list[WorkloadSpec]) -> ClusterSnapshot:
    return snapshot(nodes, QUEUES, workloads, pools=POOLS)


@pytest.mark.parametrize(
    ("slots", "workloads", "shares"),
    [
        # in proportion to demand (pods x GPUs): 10 and 30 on 8 slots
        (8, [job("a", 10, 1), job("b", 30, 1)], {"a": 2, "b": 6}),
        # demand x weight: 10 x 3 and 30 x 1
        (8, [job("a", 10, 1, weight=3), job("b", 30, 1)], {"a": 4, "b": 4}),
        # never more than the demand: what one cannot use goes to the others
        (8, [job("a", 2, 1, weight=10), job("b", 30, 1)], {"a": 2, "b": 6}),
        # demand counts GPUs, not pods: two 2-GPU pods weigh as much as four 1-GPU pods
        (8, [job("a", 2, 1, gpus=2), job("b", 4, 1), job("c", 8, 1)], {"a": 1, "b": 2, "c": 4}),
        # whole slots rounded down; the leftovers go by largest remainder, then to the
        # earlier submission (8/3 each: 2 + 2 + 2, two left over)
        (8, [job("a", 9, 1), job("b", 9, 1), job("c", 9, 1)], {"a": 3, "b": 3, "c": 2}),
        # a gang its share does not cover gives its share up to the others
        (8, [job("el", 8, 1), job("gang", 6)], {"el": 8}),
        # weight 0: no share while others ask
        (8, [job("a", 8, 1, weight=0), job("b", 8, 1)], {"b": 8}),
    ],
    ids=[
        "demand",
        "demand-x-weight",
        "capped-at-demand",
        "gpus-per-pod",
        "largest-remainder-then-fifo",
        "gang-gives-up",
        "weight-zero",
    ],
)
def test_fair_targets(slots: int, workloads: list[WorkloadSpec], shares: dict[str, int]) -> None:
    session = Session(cluster([node("n1", slots)], workloads))
    targets = fair_targets(float(slots), list(session.workloads.values()))
    assert {w: sum(counts.values()) for w, counts in targets.items()} == shares


@dataclass
class Case:
    id: str
    nodes: list[NodeSpec]
    workloads: list[WorkloadSpec]
    pods: dict[str, int]
    # the workload that can never fit, and what its reason must say
    never: str = "huge"
    says: list[str] = field(default_factory=list)


CASES = [
    Case(
        "more GPUs than the pool has",
        [node("n1", 8)],
        # before: huge took part (first in line), starved the gang and then gave up
        [job("huge", 16), job("gang", 2), job("el", 8, 1)],
        {"gang": 2, "el": 6},
        says=["needs 16 GPUs", "ready nodes of the pool have 8"],
    ),
    Case(
        "a pod wider than any node",
        [node("n1", 4), node("n2", 4)],
        [job("huge", 1, gpus=8), job("gang", 6)],
        {"gang": 6},
        says=["a pod of 8 GPUs fits no ready node"],
    ),
    Case(
        "a pod asking more CPU than any node has",
        [node("n1", 8, cpu=16.0)],
        [job("huge", 1, gpus=1, cpu=32.0), job("gang", 6)],
        {"gang": 6},
        says=["a pod of 1 GPUs and 32 CPU cores fits no ready node"],
    ),
    Case(
        "a node selector no node matches",
        [node("n1", 8, labels={"gpu": "a100"})],
        [job("huge", 4, node_selector={"gpu": "h100"}), job("gang", 6)],
        {"gang": 6},
        says=["fits no ready node matching gpu=h100"],
    ),
    Case(
        "more pods of a gang than the nodes can hold",
        [node("n1", 4), node("n2", 2), node("n3", 2)],
        [job("huge", 2, gpus=3), job("gang", 6)],
        {"gang": 6},
        says=["needs 2 pods of 3 GPUs at once", "hold at most 1"],
    ),
    Case(
        "nodes that are not ready do not count",
        [node("n1", 8), node("n2", 8, state="cordoned")],
        [job("huge", 12), job("gang", 6)],
        {"gang": 6},
        says=["needs 12 GPUs", "have 8"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_workload_that_can_never_fit_takes_no_part(case: Case) -> None:
    final, results = settle(cluster(case.nodes, case.workloads))
    assert {w: len(nodes) for w, nodes in running(final).items()} == case.pods
    waiting = results[-1].pending[case.never]
    assert waiting.reason_kind == "capacity"
    assert "can never run in pool default" in waiting.reason
    for fragment in case.says:
        assert fragment in waiting.reason


def test_zero_gpu_workloads_start_fifo_where_they_fit() -> None:
    snap = cluster(
        [node("n1", 8, cpu=4.0)],
        [
            job("big", 16, 1),
            job("cpu-1", gpus=0, cpu=3.0),
            job("cpu-2", gpus=0, cpu=2.0),
            job("cpu-3", gpus=0, cpu=1.0),
        ],
    )
    final, results = settle(snap)
    assert {w: len(nodes) for w, nodes in running(final).items()} == {
        "big": 8,
        "cpu-1": 1,
        "cpu-3": 1,
    }
    assert results[-1].pending["cpu-2"].reason_kind == "capacity"


def _one_at_a_time(slots: float, workloads: list[WorkloadState]) -> dict[str, dict[str, int]]:
    """The division as Determined's rule states it: divide, let the latest-submitted
    workload whose share misses its minimum give up, divide again."""
    active = sorted(workloads, key=lambda w: (w.spec.submitted_at, w.spec.creation_order))
    while True:
        claims = [
            ShareClaim(w.id, 0.0, w.max_gpus, math.inf, 0, w.max_gpus * w.spec.weight, i)
            for i, w in enumerate(active)
        ]
        shares = divide(slots, claims)
        counts = {w.id: counts_for_share(w, shares[w.id]) for w in active}
        starved = [w for w in active if counts[w.id] is None]
        if not starved:
            return {k: v for k, v in counts.items() if v is not None}
        active.remove(starved[-1])


@pytest.mark.parametrize("seed", range(4))
def test_fair_targets_match_giving_up_one_at_a_time(seed: int) -> None:
    """Leftover slots that feed one gang and starve another, elastic and strict gangs,
    fractions, weights (0 too): the fast division gives what the rule gives."""
    rng = random.Random(seed)
    for _ in range(150):
        jobs = []
        for i in range(rng.randint(1, 24)):
            pods = rng.choice([1, 1, 2, 3, 4, 8])
            jobs.append(
                job(
                    f"w{i}",
                    pods,
                    rng.choice([None, 1, pods]),
                    gpus=rng.choice([1, 1, 2, 0.5]),
                    weight=rng.choice([1, 1, 1, 2, 3, 0.5, 0]),
                )
            )
        slots = float(rng.choice([1, 2, 3, 5, 8, 13, 16, 24]))
        session = Session(cluster([node("n1", 64)], jobs))
        workloads = list(session.workloads.values())
        assert fair_targets(slots, workloads) == _one_at_a_time(slots, workloads)
