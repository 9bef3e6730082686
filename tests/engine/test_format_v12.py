"""The four rules FORMAT v1.2 adds to "The quota policy in detail": queue order as a tree
with two more keys, the reclaiming side judged on what its own subtree gives back,
consolidation in victim order, and time-based fairshare's k without an upper bound.
Cluster in, placements, evictions and moves out."""

from __future__ import annotations

import math

import pytest

from scheduler_core.engine import Evict, Move, PoolConfig, run_cycle
from scheduler_core.engine.plugins.proportion.division import divide
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.schemas.pools import PoolSettings
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload
from tests.engine.plugins.proportion.test_division import claim

ALLOCATE_ONLY = [PoolConfig(name="default", preemption=False, consolidation=False)]


def _evicted(results):  # type: ignore[no-untyped-def]
    return {d.workload for r in results for d in r.decisions if isinstance(d, Evict)}


# ------------------------------------------------------------ 1. queue order
# (case, nodes' GPUs, queues, workloads, the one of "first"/"second" that starts)
# Only one of the two pending jobs fits; preemption is off, so it is queue order alone.
QUEUE_ORDER_CASES = [
    (
        # siblings pa and pb of one department: compared with each other (pa: 3 of its
        # 3, pb: 3 of its 2, over its fairshare), not by org's share with each job
        "projects of one department are compared with each other",
        5,
        [dept("org", 5), project("pa", gpus=2), project("pb", gpus=2)],
        [
            workload("b-run", project="pb", gpus=2, running_on=["n1"]),
            workload("first", project="pa", gpus=3),
            workload("second", project="pb", gpus=1),
        ],
        "first",
    ),
    (
        # both departments at 3 of 4 with their job; d2 holds nothing without it
        "the share without the workload: the more starved queue",
        8,
        [
            dept("d1", 4),
            dept("d2", 4),
            dept("d3", rank=-1),
            project("p1", "d1", 4),
            project("p2", "d2", 4),
            project("p3", "d3", rank=-1),
        ],
        [
            workload("p1-run", project="p1", gpus=2, running_on=["n1"]),
            workload("fill", project="p3", gpus=3, running_on=["n1"]),
            workload("second", project="p1", gpus=1),
            workload("first", project="p2", gpus=3),
        ],
        "first",
    ),
    (
        # both at half of what they are entitled to, before and without their jobs:
        # d2, entitled to 2, before d1, entitled to 4
        "the smaller entitlement",
        8,
        [
            dept("d1", 4),
            dept("d2", 2),
            dept("d3", rank=-1),
            project("p1", "d1", 4),
            project("p2", "d2", 2),
            project("p3", "d3", rank=-1),
        ],
        [
            workload("fill", project="p3", gpus=6, running_on=["n1"]),
            workload("second", project="p1", gpus=2),
            workload("first", project="p2", gpus=1),
        ],
        "first",
    ),
    (
        # everything equal: the older department
        "the older queue",
        8,
        [
            dept("d1", 2),
            dept("d2", 2),
            dept("d3", rank=-1),
            project("p1", "d1", 2),
            project("p2", "d2", 2),
            project("p3", "d3", rank=-1),
        ],
        [
            workload("fill", project="p3", gpus=6, running_on=["n1"]),
            workload("second", project="p2", gpus=2),
            workload("first", project="p1", gpus=2),
        ],
        "first",
    ),
    (
        # p0 (weight 0, no quota) is entitled to no GPUs: it comes after p1, although
        # its department is older and its job smaller
        "a queue entitled to none of a resource comes last",
        4,
        [
            dept("d0", over_quota_weight=0),
            dept("d1", 2),
            project("p0", "d0", over_quota_weight=0),
            project("p1", "d1", 2),
        ],
        [
            workload("fill", project="p1", gpus=1, running_on=["n1"]),
            workload("second", project="p0", gpus=2),
            workload("first", project="p1", gpus=3),
        ],
        "first",
    ),
]


@pytest.mark.parametrize(
    ("gpus", "queues", "work", "starts"),
    [case[1:] for case in QUEUE_ORDER_CASES],
    ids=[case[0] for case in QUEUE_ORDER_CASES],
)
def test_queue_order(gpus, queues, work, starts) -> None:  # type: ignore[no-untyped-def]
    result = run_cycle(snapshot([node("n1", gpus)], queues, work, pools=ALLOCATE_ONLY))
    other = "second" if starts == "first" else "first"
    assert starts not in result.pending
    assert other in result.pending


# ------------------------------------------------------------ 2. the reclaiming side
# (case, nodes' GPUs, queues, workloads, evicted, the reclaimer starts)
RECLAIM_SIDE_CASES = [
    (
        # org holds its fairshare 8, all in pa (fairshare 4): pb takes pa's newest
        "a department at its fairshare reclaims from its own project for another",
        [8, 8],
        [
            dept("d1", 8),
            dept("d2", 8),
            project("pa", "d1", 4),
            project("pb", "d1", 4),
            project("pc", "d2", 8),
        ],
        [
            workload("a1", project="pa", gpus=4, running_on=["n1"]),
            workload("a2", project="pa", gpus=4, running_on=["n1"]),
            workload("c1", project="pc", gpus=8, running_on=["n2"]),
            workload("b1", project="pb", gpus=4),
        ],
        {"a2"},
        True,
    ),
    (
        # d1 holds 6 of 8; with pb's 4 it would hold 10, but pa gives back 2 (to its
        # fairshare 4) and d2, over its fairshare, the other 2
        "own-subtree victims count, others' add room",
        [8, 8],
        [
            dept("d1", 8),
            dept("d2", 8),
            project("pa", "d1", 4),
            project("pb", "d1", 4),
            project("pc", "d2", 8),
        ],
        [
            workload("a1", project="pa", gpus=2, running_on=["n1"], started_at=0),
            workload("a2", project="pa", gpus=2, running_on=["n1"], started_at=1),
            workload("a3", project="pa", gpus=2, running_on=["n1"], started_at=2),
            workload("c2", project="pc", gpus=8, running_on=["n2"], started_at=0),
            workload("c1", project="pc", gpus=2, running_on=["n1"], started_at=3),
            workload("b1", project="pb", gpus=4),
        ],
        {"a3", "c1"},
        True,
    ),
    (
        # org (weight 0: fairshare = its quota 8) holds 8 and 2 GPUs are free: taking
        # a3 alone would fit pb's job but leave org at 9, so a2 goes too
        "free GPUs do not count for the department",
        [10],
        [
            dept("org", 8, over_quota_weight=0),
            dept("other", 2),
            project("pa", "org", 3),
            project("pb", "org", 3),
            project("pc", "org", 2),
            project("po", "other", 2),
        ],
        [
            workload("a1", project="pa", gpus=2, running_on=["n1"], started_at=0),
            workload("a2", project="pa", gpus=2, running_on=["n1"], started_at=1),
            workload("a3", project="pa", gpus=2, running_on=["n1"], started_at=2),
            workload("c1", project="pc", gpus=2, running_on=["n1"], started_at=0),
            workload("b1", project="pb", gpus=3),
        ],
        {"a2", "a3"},
        True,
    ),
    (
        # org holds its fairshare 8; pa is over its own but holds only 1 GPU beyond
        # it, and no other department is over: org cannot get 4 back for pb
        "a department whose projects cannot give enough waits",
        [8, 8],
        [
            dept("d1", 8),
            dept("d2", 8),
            project("pa", "d1", 3),
            project("pb", "d1", 5),
            project("pc", "d2", 8),
        ],
        [
            workload("a1", project="pa", gpus=4, running_on=["n1"]),
            workload("b0", project="pb", gpus=4, running_on=["n1"], priority=100),
            workload("c1", project="pc", gpus=8, running_on=["n2"]),
            workload("b1", project="pb", gpus=4),
        ],
        set(),
        False,
    ),
]


@pytest.mark.parametrize(
    ("gpus", "queues", "work", "evicted", "starts"),
    [case[1:] for case in RECLAIM_SIDE_CASES],
    ids=[case[0] for case in RECLAIM_SIDE_CASES],
)
def test_the_reclaiming_side(gpus, queues, work, evicted, starts) -> None:  # type: ignore[no-untyped-def]
    nodes = [node(f"n{i + 1}", g) for i, g in enumerate(gpus)]
    final, results = settle(snapshot(nodes, queues, work))
    assert _evicted(results) == evicted
    assert ("b1" in running(final)) is starts


def test_a_reclaim_leaves_its_department_within_its_fairshare() -> None:
    # (later cycles may start an evicted workload again on idle GPUs: that is allocate)
    queues, work = RECLAIM_SIDE_CASES[2][2], RECLAIM_SIDE_CASES[2][3]
    result = run_cycle(snapshot([node("n1", 10)], queues, work))
    org = result.queues["org"]["default"]
    assert _evicted([result]) == {"a2", "a3"}
    assert org.allocated.gpus <= org.fairshare.gpus


# ------------------------------------------------------------ 3. consolidation
# (case, workloads on two 4-GPU nodes (and a third, full), the one moved)
CONSOLIDATION_CASES = [
    (
        # n2 is closest to having room and holds the smaller workload, but "low" has
        # the lowest priority: it moves and the job takes n1
        "lowest priority first",
        [
            workload("low", gpus=2, priority=40, running_on=["n1"], started_at=0),
            workload("keen", gpus=1, priority=60, running_on=["n2"], started_at=5),
        ],
        "low",
    ),
    (
        # equal priority: the most recent moves, although the older one is on the
        # first node and as small
        "then the most recent first",
        [
            workload("old", gpus=2, running_on=["n1"], started_at=0),
            workload("new", gpus=2, running_on=["n2"], started_at=5),
        ],
        "new",
    ),
]


@pytest.mark.parametrize(
    ("work", "moved"),
    [case[1:] for case in CONSOLIDATION_CASES],
    ids=[case[0] for case in CONSOLIDATION_CASES],
)
def test_consolidation_moves_in_victim_order(work, moved) -> None:  # type: ignore[no-untyped-def]
    queues = [dept("org", 12), project("p", gpus=12)]
    full = workload("full", gpus=4, kind="interactive", preemptible=False, running_on=["n3"])
    job = workload("big", gpus=4)
    nodes = [node("n1", 4), node("n2", 4), node("n3", 4)]
    result = run_cycle(snapshot(nodes, queues, [*work, full, job]))
    assert "big" not in result.pending
    assert {d.workload for d in result.decisions if isinstance(d, Move)} == {moved}


# ------------------------------------------------------------ 4. time-based k
@pytest.mark.parametrize("k", [0, 1, 1000, 10_000, 1.7e308])
def test_k_has_no_upper_bound(k: float) -> None:
    assert validate(PoolSettings, {"time_based_k": k}).given() == {"time_based_k": k}


@pytest.mark.parametrize("k", [-1, math.inf, math.nan, "1"])
def test_k_is_a_finite_number_from_0(k: object) -> None:
    with pytest.raises(SchemaInvalid):
        validate(PoolSettings, {"time_based_k": k})


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        # busy used 0.6 of the pool against a weight share of 0.5: 0.5 + 1 * (0.5 - 0.6)
        # = 0.4 against 0.5 + 0.5 = 1.0 (8 GPUs: 2.29 and 5.71, whole units 2 and 6)
        (1.0, {"busy": 2, "idle": 6}),
        # any usage over its share takes its over-quota share away
        (10_000, {"busy": 0, "idle": 8}),
        (1.7e308, {"busy": 0, "idle": 8}),
    ],
)
def test_a_strong_k_takes_the_over_quota_share_of_the_queue_that_used_more(
    k: float, expected: dict[str, float]
) -> None:
    claims = [claim("busy", 0, 8, usage=0.6), claim("idle", 0, 8, usage=0.0, order=1)]
    assert divide(8, claims, k) == pytest.approx(expected)
