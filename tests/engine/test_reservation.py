"""reserve_for_gangs: a gang that waits for scattered GPUs gets nodes held for it, which
drain instead of filling with small work, and it starts there without a move."""

from __future__ import annotations

from scheduler_core.engine import Allocate, Evict, Move, PoolConfig, run_cycle
from tests.engine.factories import dept, node, project, snapshot, workload

NOW = 36_000.0
NODES = [node("n1", 8), node("n2", 8)]
QUEUES = [dept("org", 16), project("p", gpus=16)]
HOLDS = [PoolConfig(name="default", consolidation=False, reserve_for_gangs=True)]
NO_HOLDS = [PoolConfig(name="default", consolidation=False)]


def _work(*, young_running: bool = True) -> list:  # type: ignore[type-arg]
    # n1 holds a 6-GPU run of ten hours (2 free), n2 a 4-GPU run of a minute (4 free):
    # 6 GPUs are free, but not on one node, so "big" (6 GPUs, first in the queue) waits
    work = [workload("old", gpus=6, running_on=["n1"], started_at=0.0)]
    if young_running:
        work.append(workload("young", gpus=4, running_on=["n2"], started_at=NOW - 60))
    work += [
        workload("big", gpus=6, submitted_at=NOW - 600),
        workload("small", gpus=4, submitted_at=NOW - 300),
    ]
    return work


def _started(result) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    return {
        d.workload: [p.node for p in d.pods] for d in result.decisions if isinstance(d, Allocate)
    }


def test_a_fragmented_gang_gets_the_node_likeliest_to_drain_and_small_work_stays_off_it() -> None:
    result = run_cycle(snapshot(NODES, QUEUES, _work(), HOLDS, now=NOW))
    assert _started(result) == {}
    # n2's run is a minute old, n1's ten hours: n2 is held
    assert "node n2 is held for it" in result.pending["big"].reason
    small = result.pending["small"]
    assert small.reason_kind == "capacity"
    assert small.reason == (
        "node n2 is held for workload big (6 GPUs), which waits for it to drain"
    )


def test_the_gang_starts_on_the_held_node_once_it_drains() -> None:
    first = run_cycle(snapshot(NODES, QUEUES, _work(), HOLDS, now=NOW))
    assert "node n2 is held for it" in first.pending["big"].reason
    # "young" finishes: n2 is free and "big" starts there, nothing moved or evicted
    result = run_cycle(snapshot(NODES, QUEUES, _work(young_running=False), HOLDS, now=NOW + 600))
    assert _started(result) == {"big": ["n2"]}
    assert not [d for d in result.decisions if isinstance(d, Evict | Move)]
    # the hold is gone with it: "small" waits for room, not for a hold
    assert "held" not in result.pending["small"].reason


def test_off_by_default_small_work_takes_the_free_gpus() -> None:
    assert PoolConfig(name="default").reserve_for_gangs is False
    result = run_cycle(snapshot(NODES, QUEUES, _work(), NO_HOLDS, now=NOW))
    assert _started(result) == {"small": ["n2"]}
    assert "held" not in result.pending["big"].reason


def test_one_gpu_work_is_not_held_for_and_fits_beside_a_hold() -> None:
    work = [*_work()[:-1], workload("one", gpus=1, submitted_at=NOW - 300)]
    result = run_cycle(snapshot(NODES, QUEUES, work, HOLDS, now=NOW))
    # n1 is not held: a 1-GPU workload still starts in its free GPUs
    assert _started(result) == {"one": ["n1"]}
    assert "big" in result.pending


def test_a_gang_of_several_pods_holds_several_nodes() -> None:
    nodes = [node("n1", 8), node("n2", 8), node("n3", 8)]
    queues = [dept("org", 24), project("p", gpus=24)]
    work = [
        workload("old", gpus=4, running_on=["n1"], started_at=0.0),
        workload("mid", gpus=2, running_on=["n2"], started_at=NOW - 3600),
        workload("young", gpus=2, running_on=["n3"], started_at=NOW - 60),
        workload("gang", gpus=8, pods=2, submitted_at=NOW - 600),
        workload("small", gpus=4, submitted_at=NOW - 300),
    ]
    result = run_cycle(snapshot(nodes, queues, work, HOLDS, now=NOW))
    assert "nodes n3 and n2 are held for it" in result.pending["gang"].reason
    # "small" fits n1 only, which is not held
    assert _started(result) == {"small": ["n1"]}


def test_priority_preemption_evicts_its_own_queues_lower_priority_work_not_the_hold() -> None:
    # n2 is held for a's gang "big" (6 GPUs; 7 are free, but scattered). b's "urgent"
    # would fit n2's 4 free GPUs, which are held; it does not wait for the hold (the
    # gang will fill n2), nor is it placed there: it preempts b's own "low" on n3
    nodes = [node("n1", 8), node("n2", 8), node("n3", 8)]
    queues = [dept("org", 24), project("a", gpus=16), project("b", gpus=8)]
    work = [
        workload("old", "a", gpus=6, running_on=["n1"], started_at=0.0),
        workload("young", "a", gpus=4, running_on=["n2"], started_at=NOW - 60),
        workload("low", "b", gpus=7, running_on=["n3"], started_at=NOW - 3600, priority=10),
        workload("big", "a", gpus=6, submitted_at=NOW - 600),
        workload("urgent", "b", gpus=3, submitted_at=NOW - 300, priority=100),
    ]
    result = run_cycle(snapshot(nodes, queues, work, HOLDS, now=NOW))
    evicted = {d.workload: d.reason for d in result.decisions if isinstance(d, Evict)}
    assert evicted == {"low": "preempted by higher-priority urgent (priority 100)"}
    assert _started(result) == {"urgent": ["n3"]}
    assert "node n2 is held for it" in result.pending["big"].reason
    # without holds it takes n2's free GPUs and preempts nothing
    result = run_cycle(snapshot(nodes, queues, work, NO_HOLDS, now=NOW))
    assert _started(result)["urgent"] == ["n2"]
    assert not [d for d in result.decisions if isinstance(d, Evict) and d.by == "urgent"]


def test_alike_waiting_workloads_share_the_held_nodes_reason() -> None:
    # six 4-GPU workloads behind "big" (as "small" above): each is kept off n2 and says so
    work = _work() + [workload(f"small-{i}", gpus=4, submitted_at=NOW - 200 + i) for i in range(6)]
    result = run_cycle(snapshot(NODES, QUEUES, work, HOLDS, now=NOW))
    assert _started(result) == {}
    reasons = {result.pending[f"small-{i}"].reason for i in range(6)}
    assert reasons == {"node n2 is held for workload big (6 GPUs), which waits for it to drain"}


def test_an_alike_gang_is_tried_again_once_something_started() -> None:
    # 7 GPUs free: 2 on n1, 4 on n2, 1 on n3. "a" (two pods of 3) does not fit; "b" (1 GPU)
    # starts on n3; "c", alike to "a", is judged on the 6 GPUs left, not given a's reason
    nodes = [node("n1", 8), node("n2", 8), node("n3", 8)]
    work = [
        workload("r1", gpus=6, running_on=["n1"]),
        workload("r2", gpus=4, running_on=["n2"]),
        workload("r3", gpus=7, running_on=["n3"]),
        workload("a", gpus=3, pods=2, submitted_at=NOW - 30),
        workload("b", gpus=1, submitted_at=NOW - 20),
        workload("c", gpus=3, pods=2, submitted_at=NOW - 10),
    ]
    queues = [dept("org", 24), project("p", gpus=24)]
    pools = [PoolConfig(name="default", consolidation=False, preemption=False)]
    result = run_cycle(snapshot(nodes, queues, work, pools, now=NOW))
    assert _started(result) == {"b": ["n3"]}
    assert "(7 free," in result.pending["a"].reason
    assert "(6 free," in result.pending["c"].reason
