"""Moves and preemptions cost the work they throw away: what a user notices."""

from __future__ import annotations

from scheduler_core.engine import Evict, Move, PoolConfig, run_cycle
from scheduler_core.engine.simulation import Simulation
from tests.engine.factories import dept, node, project, snapshot, workload

NODES = [node("n1", 4), node("n2", 4)]
QUEUES = [dept("org", 8), project("p", gpus=8)]
WEIGHS = [PoolConfig(name="default", consolidation_weighs_lost_work=True)]


def _moved(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [d.workload for d in result.decisions if isinstance(d, Move)]


def test_a_pod_that_has_run_long_is_not_moved_for_a_job_that_just_arrived() -> None:
    # "old" has run 10 hours on 2 GPUs; "big" arrived a minute ago: moving "old" would
    # throw away 20 GPU-hours to start "big" a little earlier, so "big" waits
    now = 36_000.0
    work = [
        workload("old", gpus=2, running_on=["n1"], started_at=0.0),
        workload("older", gpus=2, running_on=["n2"], started_at=0.0),
        workload("big", gpus=4, submitted_at=now - 60),
    ]
    result = run_cycle(snapshot(NODES, QUEUES, work, WEIGHS, now=now))
    assert _moved(result) == []
    assert "big" in result.pending
    # a pool that does not weigh it (KAI's behaviour, the default) moves it
    assert _moved(run_cycle(snapshot(NODES, QUEUES, work, now=now))) == ["old"]


def test_a_young_pod_is_moved_rather_than_one_that_has_run_long() -> None:
    now = 36_000.0
    work = [
        workload("old", gpus=2, running_on=["n1"], started_at=0.0),
        workload("young", gpus=2, running_on=["n2"], started_at=now - 30),
        workload("big", gpus=4, submitted_at=now - 60),
    ]
    result = run_cycle(snapshot(NODES, QUEUES, work, WEIGHS, now=now))
    assert _moved(result) == ["young"]
    assert "big" not in result.pending


def test_a_job_that_has_waited_as_long_as_the_move_would_lose_gets_it() -> None:
    # moving "old" (2 GPUs, 1 hour) loses 2 GPU-hours; "big" (4 GPUs) has waited 30 min
    now = 36_000.0
    work = [
        workload("old", gpus=2, running_on=["n1"], started_at=now - 3600),
        workload("older", gpus=2, running_on=["n2"], started_at=0.0),
        workload("big", gpus=4, submitted_at=now - 1800),
    ]
    assert _moved(run_cycle(snapshot(NODES, QUEUES, work, WEIGHS, now=now))) == ["old"]


def test_reclaim_spares_a_long_run_when_a_young_one_frees_the_same_gpus() -> None:
    now = 36_000.0
    queues = [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)]
    work = [
        workload("long", project="p1", gpus=2, running_on=["n1"], started_at=0.0),
        workload("young", project="p1", gpus=2, running_on=["n1"], started_at=now - 600),
        workload("mine-a", project="p1", gpus=4, running_on=["n2"], started_at=now - 60),
        workload("ask", project="p2", gpus=2),
    ]
    result = run_cycle(snapshot(NODES, queues, work, now=now))
    evicted = [d.workload for d in result.decisions if isinstance(d, Evict)]
    assert "long" not in evicted and evicted


def test_a_moved_workload_restarts_and_its_event_says_what_was_lost() -> None:
    work = [
        workload("t1", gpus=2, running_on=["n1"], started_at=0.0),
        workload("t2", gpus=2, running_on=["n2"], started_at=0.0),
    ]
    sim = Simulation(
        pools=snapshot(NODES, QUEUES, []).pools,
        nodes={n.name: n for n in NODES},
        queues={q.name: q for q in QUEUES},
        active={w.id: w for w in work},
        durations={"t1": 1000.0, "t2": 1000.0},
        now=600.0,
    )
    sim.submit(workload("big", gpus=4, submitted_at=0.0), 100.0)
    sim.schedule()
    moved = [e for e in sim.take_events() if e.type == "moved"]
    assert len(moved) == 1
    assert moved[0].to_dict()["lost_gpu_seconds"] == 2 * 600
    # the moved one needs its whole duration again: it ends 1000 s after the move
    sim.advance(1100.0)
    assert sim.status[moved[0].workload] == "running"
    sim.advance(1600.0)
    assert sim.status[moved[0].workload] == "completed"
