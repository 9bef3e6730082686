"""Reclaim victims judged before each is taken, elastic workloads below their pods
reclaiming and preempting one pod at a time, and in-queue preemption under a limit
(FORMAT v1.1, "The quota policy in detail"): cluster in, evictions and figures out."""

from __future__ import annotations

import pytest

from scheduler_core.engine import Evict, PoolConfig, Resources, run_cycle
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload

INF = float("inf")
MIN_RUNTIME = [PoolConfig(name="default", min_guaranteed_runtime=50)]


def _evictions(results):  # type: ignore[no-untyped-def]
    return {d.workload: d.reason for r in results for d in r.decisions if isinstance(d, Evict)}


def _fairshare(result, queue):  # type: ignore[no-untyped-def]
    return result.queues[queue]["default"].fairshare.gpus


# (case, queues, workloads, evicted, runs after, fixed-point fairshare of the victim queue)
VICTIM_CASES = [
    (
        # p1 holds 8 of its deserved 4: "held" (6) straddles the line and goes whole,
        # "small" (2) is then wholly within deserved and stays
        "straddling workload taken whole",
        [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)],
        [
            workload("small", project="p1", gpus=2, priority=60, running_on=["n1"]),
            workload("held", project="p1", gpus=6, running_on=["n1"]),
            workload("mine", project="p2", gpus=4),
        ],
        {"held"},
        {"small", "mine"},
        4.0,
    ),
    (
        # p1 holds exactly its deserved 6: nothing of it is over quota
        "in-quota workload protected",
        [dept("org", 8), project("p1", gpus=6), project("p2", gpus=2)],
        [
            workload("held", project="p1", gpus=6, running_on=["n1"]),
            workload("mine", project="p2", gpus=4),
        ],
        set(),
        {"held"},
        6.0,
    ),
    (
        # each further victim is judged on what is left: 8 > 3, 6 > 3, 4 > 3 (this one
        # straddles), then 2 is within the deserved 3 and stays
        "further victims judged on what remains",
        [dept("org", 8), project("p1", gpus=3), project("p2", gpus=5)],
        [
            workload("w1", project="p1", gpus=2, priority=80, running_on=["n1"]),
            workload("w2", project="p1", gpus=2, priority=70, running_on=["n1"]),
            workload("w3", project="p1", gpus=2, priority=60, running_on=["n1"]),
            workload("w4", project="p1", gpus=2, priority=50, running_on=["n1"]),
            workload("mine", project="p2", gpus=1, pods=5),
        ],
        {"w2", "w3", "w4"},
        {"w1", "mine"},
        3.0,
    ),
    (
        # a gang of four 2-GPU pods straddles p1's deserved 4 and goes whole
        "straddling gang taken whole",
        [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)],
        [
            workload("gang", project="p1", gpus=2, pods=4, running_on=["n1"] * 4),
            workload("mine", project="p2", gpus=1, pods=4),
        ],
        {"gang"},
        {"mine"},
        4.0,
    ),
]


@pytest.mark.parametrize(
    ("queues", "work", "evicted", "runs", "fair"),
    [case[1:] for case in VICTIM_CASES],
    ids=[case[0] for case in VICTIM_CASES],
)
def test_reclaim_judges_each_victim_on_what_its_queue_holds_before_it(
    queues, work, evicted, runs, fair
) -> None:  # type: ignore[no-untyped-def]
    final, results = settle(snapshot([node("n1", 8)], queues, work))
    assert set(_evictions(results)) == evicted
    assert runs <= set(running(final))
    assert _fairshare(results[-1], "p1") == pytest.approx(fair)


def test_a_straddling_victim_says_so_with_the_figures() -> None:
    _, results = settle(snapshot([node("n1", 8)], VICTIM_CASES[0][1], VICTIM_CASES[0][2]))
    assert _evictions(results)["held"] == (
        "reclaimed by p2: it straddled project p1's deserved quota of 4 GPUs in pool default "
        "(p1 held 8, 4 over quota, and this workload held 6), so it counted as over quota "
        "and was taken whole"
    )


def test_a_reclaimer_takes_from_another_department_and_a_sibling_in_one_step() -> None:
    # pa (within its deserved 4) needs one node of 4 GPUs: n1 holds pb's b3 (3 GPUs,
    # straddling pb's deserved 2) and pc's c1; pc's other work is still guaranteed
    snap = snapshot(
        [node("n1", 4), node("n2", 4), node("n3", 4)],
        [
            dept("d1", 7),
            dept("d2", 5),
            project("pa", "d1", 4),
            project("pb", "d1", 2),
            project("pc", "d2", 5),
        ],
        [
            workload("b3", project="pb", gpus=3, running_on=["n1"], started_at=0),
            workload("c1", project="pc", gpus=1, running_on=["n1"], started_at=0),
            workload("c4", project="pc", gpus=4, running_on=["n2"], started_at=90),
            workload("c4b", project="pc", gpus=4, running_on=["n3"], started_at=90),
            workload("a4", project="pa", gpus=4),
        ],
        pools=MIN_RUNTIME,
    )
    result = run_cycle(snap)
    assert set(_evictions([result])) == {"b3", "c1"}
    assert "a4" not in result.pending


def test_a_straddling_workload_is_reclaimed_once_its_guaranteed_runtime_ends() -> None:
    queues = [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)]

    def snap(now: float):  # type: ignore[no-untyped-def]
        return snapshot(
            [node("n1", 8)],
            queues,
            [
                workload("held", project="p1", gpus=8, running_on=["n1"], started_at=20),
                workload("mine", project="p2", gpus=4),
            ],
            pools=MIN_RUNTIME,
            now=now,
        )

    early = run_cycle(snap(60))
    assert early.decisions == ()
    assert early.pending["mine"].reason == "waiting for held's guaranteed runtime until t=70"
    assert set(_evictions([run_cycle(snap(80))])) == {"held"}


def test_a_fairshare_remainder_decides_who_gives_back() -> None:
    # 9 GPUs, deserved 4 + 4: the spare GPU goes to the older queue p1 (fairshare 5), so
    # p2's 5th GPU is over its fairshare and p2 may not reclaim it from p1's straddler
    queues = [dept("org", 9), project("p1", gpus=4), project("p2", gpus=4)]
    work = [
        workload("held", project="p1", gpus=7, running_on=["n1"]),
        workload("mine", project="p2", gpus=1, pods=5),
    ]
    result = run_cycle(snapshot([node("n1", 9)], queues, work))
    assert (_fairshare(result, "p1"), _fairshare(result, "p2")) == (5.0, 4.0)
    assert not _evictions([result])
    work[1] = workload("mine", project="p2", gpus=1, pods=4)
    assert set(_evictions([run_cycle(snapshot([node("n1", 9)], queues, work))])) == {"held"}


# ------------------------------------------------------------ elastic below its pods
ELASTIC_CASES = [
    (
        # p1's elastic workload (3 of 4 pods) is within its fairshare for one more pod;
        # p2 holds 5 of its deserved 4: its straddling job goes
        "reclaims its next pod",
        [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)],
        [
            workload("el", project="p1", pods=4, min_pods=1, running_on=["n1"] * 3),
            workload("hog", project="p2", gpus=5, running_on=["n1"]),
        ],
        {"hog"},
        4,
    ),
    (
        # priority preemption inside the queue, one pod at a time
        "preempts for its next pod",
        [dept("org", 8), project("p", gpus=8)],
        [
            workload("el", pods=8, min_pods=1, priority=80, running_on=["n1"] * 6),
            workload("low", gpus=2, priority=50, running_on=["n1"]),
        ],
        {"low"},
        8,
    ),
    (
        # one more pod would take p1 over its fairshare of 4: nothing is taken
        "stays within its fairshare",
        [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)],
        [
            workload("el", project="p1", pods=8, min_pods=1, running_on=["n1"] * 4),
            workload("other", project="p2", gpus=4, running_on=["n1"]),
        ],
        set(),
        4,
    ),
]


@pytest.mark.parametrize(
    ("queues", "work", "evicted", "pods"),
    [case[1:] for case in ELASTIC_CASES],
    ids=[case[0] for case in ELASTIC_CASES],
)
def test_an_elastic_workload_below_its_pods_reclaims_and_preempts_one_pod_at_a_time(
    queues, work, evicted, pods
) -> None:  # type: ignore[no-untyped-def]
    final, results = settle(snapshot([node("n1", 8)], queues, work))
    assert set(_evictions(results)) == evicted
    assert len(running(final)["el"]) == pods


def test_an_elastic_workload_that_does_not_grow_says_why() -> None:
    queues = [dept("org", 8), project("p1", gpus=4, limit=3), project("p2", gpus=4)]
    work = [
        workload("el", project="p1", pods=8, min_pods=1, running_on=["n1"] * 3),
        workload("other", project="p2", gpus=4, running_on=["n1"]),
    ]
    result = run_cycle(snapshot([node("n1", 8)], queues, work))
    assert result.not_growing["el"] == (
        "limit",
        "runs 3 of its 8 pods and does not grow: project p1 is limited to 3 GPUs in pool "
        "default; it uses 3 and this needs 1",
    )
    queues[1] = project("p1", gpus=4)
    work[0] = workload("el", project="p1", pods=8, min_pods=1, running_on=["n1"] * 4)
    kind, text = run_cycle(snapshot([node("n1", 8)], queues, work)).not_growing["el"]
    assert kind == "fairshare"
    assert text.startswith("runs 4 of its 8 pods and does not grow: project p1 would exceed")


# ------------------------------------------------------------ limits
LIMIT_CASES = [
    (
        # the project's limit, not capacity, blocks the build job beside idle GPUs
        "project limit",
        [dept("org", 8), project("p", gpus=4, limit=4), project("q", gpus=4)],
        [
            workload("train", gpus=4, priority=50, running_on=["n1"]),
            workload("build", gpus=1, priority=100, preemptible=False),
        ],
        {"train"},
        {"build"},
    ),
    (
        "department limit",
        [
            dept("org", 8, limit={"default": Resources(4, INF, INF)}),
            project("p", gpus=4),
            project("q"),
        ],
        [
            workload("train", gpus=4, priority=50, running_on=["n1"]),
            workload("build", gpus=1, priority=100),
        ],
        {"train"},
        {"build"},
    ),
    (
        # only lower-priority work of the same project gives way
        "equal priority keeps its place",
        [dept("org", 8), project("p", gpus=4, limit=4)],
        [
            workload("train", gpus=4, priority=100, running_on=["n1"]),
            workload("build", gpus=1, priority=100),
        ],
        set(),
        {"train"},
    ),
    (
        # evicting one of the two 2-GPU jobs is enough under the limit: the other stays
        "as few as possible",
        [dept("org", 8), project("p", gpus=4, limit=4)],
        [
            workload("t1", gpus=2, priority=50, running_on=["n1"]),
            workload("t2", gpus=2, priority=40, running_on=["n1"]),
            workload("build", gpus=2, priority=100),
        ],
        {"t2"},
        {"t1", "build"},
    ),
    (
        # the victim's pods would fit back where they were, but the limit would not
        # take them back: it stays evicted (what it held is counted from its pods)
        "room made under the limit stays made",
        [dept("org", 8), project("p", gpus=4, limit=2)],
        [
            workload("train", gpus=1, priority=50, running_on=["n1"]),
            workload("build", gpus=2, priority=100),
        ],
        {"train"},
        {"build"},
    ),
]


@pytest.mark.parametrize(
    ("queues", "work", "evicted", "runs"),
    [case[1:] for case in LIMIT_CASES],
    ids=[case[0] for case in LIMIT_CASES],
)
def test_a_limit_that_blocks_more_important_work_gives_way_to_in_queue_preemption(
    queues, work, evicted, runs
) -> None:  # type: ignore[no-untyped-def]
    final, results = settle(snapshot([node("n1", 8)], queues, work))
    assert set(_evictions(results)) == evicted
    assert runs <= set(running(final))
    assert all(
        r.reason.startswith("preempted by higher-priority build")
        for res in results
        for r in res.decisions
        if isinstance(r, Evict)
    )


def test_room_an_earlier_reclaim_freed_is_taken_without_evicting_more() -> None:
    # p1 (no quota) runs eight 2-GPU jobs on two 8-GPU nodes; p2 asks for two 1-GPU
    # workloads. The first reclaims one run (2 GPUs); the second fits in the GPU left
    # over, so nothing else is evicted and no GPU is left idle
    nodes = [node("n1", 8), node("n2", 8)]
    queues = [dept("org", 16), project("p1", gpus=0), project("p2", gpus=16)]
    work = [
        *(
            workload(f"run{i}", project="p1", gpus=2, running_on=[f"n{1 + i // 4}"])
            for i in range(8)
        ),
        *(workload(f"ask{i}", project="p2", gpus=1, submitted_at=50.0) for i in range(2)),
    ]
    result = run_cycle(snapshot(nodes, queues, work))
    assert len(_evictions([result])) == 1
    assert result.idle_gpus == 0 and list(result.pending) == ["run7"]
