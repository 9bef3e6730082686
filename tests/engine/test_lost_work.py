"""Moves and preemptions cost the work they throw away: what a user notices."""

from __future__ import annotations

import pytest

from scheduler_core.engine import CycleResult, Evict, Move, PoolConfig, WorkloadSpec, run_cycle
from tests.engine.factories import dept, node, project, settle, simulation, snapshot, workload

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
    # a pool that does not weigh it (KAI's behaviour, the default) moves one, in victim
    # order: the more recently submitted (FORMAT v1.2)
    assert _moved(run_cycle(snapshot(NODES, QUEUES, work, now=now))) == ["older"]


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


def test_a_job_s_wait_for_its_turn_does_not_pay_for_a_move() -> None:
    # "big" was submitted 10 hours ago, but its queue's rules kept it waiting until a
    # minute ago: it has waited for room one minute, which does not pay for throwing
    # away 20 GPU-hours of "old"
    now = 36_000.0
    old_runs = [
        workload("old", gpus=2, running_on=["n1"], started_at=0.0),
        workload("older", gpus=2, running_on=["n2"], started_at=0.0),
    ]
    turn_came = workload("big", gpus=4, submitted_at=0.0, room_wait_since=now - 60)
    result = run_cycle(snapshot(NODES, QUEUES, [*old_runs, turn_came], WEIGHS, now=now))
    assert _moved(result) == []
    assert "big" in result.pending
    # had it waited for room all along, its 40 GPU-hours of waiting would have paid
    waited_for_room = workload("big", gpus=4, submitted_at=0.0)
    result = run_cycle(snapshot(NODES, QUEUES, [*old_runs, waited_for_room], WEIGHS, now=now))
    assert _moved(result) == ["old"]


def test_the_simulator_notes_when_a_workload_s_turn_came() -> None:
    # p's limit of 4 GPUs keeps "more" waiting; once the limit is raised only room does
    # (n1 is full): its wait for room starts then
    nodes = [node("n1", 4)]
    queues = [dept("org", 8), project("p", gpus=8, limit=4)]
    sim = simulation(nodes, queues, [workload("run", gpus=4, running_on=["n1"])])
    sim.submit(workload("more", gpus=4, submitted_at=0.0), None)
    assert sim.schedule().pending["more"].reason_kind == "limit"
    assert sim.active["more"].room_wait_since is None
    sim.advance(600.0)
    sim.set_queue("p", limit={})
    assert sim.schedule().pending["more"].reason_kind == "capacity"
    assert sim.active["more"].room_wait_since == 600.0
    sim.advance(1200.0)
    sim.schedule()
    assert sim.active["more"].room_wait_since == 600.0  # still waiting for room since then


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


def _weighed_cycle_on_three_nodes(gpus: int, work: list[WorkloadSpec], now: float) -> CycleResult:
    """One cycle, in a pool that weighs moves, on nodes n1-n3 of `gpus` GPUs each, for
    one project that may use all of them."""
    nodes = [node(f"n{i}", gpus) for i in (1, 2, 3)]
    queues = [dept("org", 3 * gpus), project("p", gpus=3 * gpus)]
    return run_cycle(snapshot(nodes, queues, work, WEIGHS, now=now))


def test_a_pod_as_wide_as_the_job_s_is_not_moved_for_it() -> None:
    # "wide" is the youngest run, but wherever its 8 GPUs could go, "big" could have gone
    # itself: moving it only swaps the two. Moving "small1" onto n3's free half makes n2
    # whole, and that is the only move
    now = 36_000.0
    work = [
        workload("wide", gpus=8, running_on=["n1"], started_at=now - 60),
        workload("small1", gpus=4, running_on=["n2"], started_at=now - 600),
        workload("small2", gpus=4, running_on=["n3"], started_at=now - 3600),
        workload("big", gpus=8, submitted_at=now - 3600),
    ]
    result = _weighed_cycle_on_three_nodes(8, work, now)
    assert _moved(result) == ["small1"]
    assert "big" not in result.pending


def test_a_workload_whose_room_the_job_did_not_take_stays_where_it_was() -> None:
    # making room for "big" (3 GPUs) takes "w3" and "w4" off their nodes; "big" lands on
    # n2 and "w3" moves to n3, so "w4" can stay on n3 and keeps its run
    now = 36_000.0
    work = [
        workload("w1", gpus=3, running_on=["n1"], started_at=now - 3600),
        workload("w2", gpus=1, running_on=["n2"], started_at=now - 1800),
        workload("w3", gpus=2, running_on=["n2"], started_at=now - 60),
        workload("w4", gpus=2, running_on=["n3"], started_at=now - 60),
        workload("big", gpus=3, submitted_at=now - 7200),
    ]
    result = _weighed_cycle_on_three_nodes(4, work, now)
    assert _moved(result) == ["w3"]
    assert "big" not in result.pending


def test_a_moved_workload_restarts_and_its_event_says_what_was_lost() -> None:
    work = [
        workload("t1", gpus=2, running_on=["n1"], started_at=0.0),
        workload("t2", gpus=2, running_on=["n2"], started_at=0.0),
    ]
    sim = simulation(NODES, QUEUES, work, {"t1": 1000.0, "t2": 1000.0}, now=600.0)
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


# ---------------------------------------------------------------- reclaim weighs lost work
RECLAIM_WEIGHS = [PoolConfig(name="default", reclaim_weighs_lost_work=True)]
TWO_QUEUES = [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)]


def _evicted(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [d.workload for d in result.decisions if isinstance(d, Evict)]


def _p1_over_quota_for(hours: float, now: float) -> list:  # type: ignore[type-arg]
    """p1 runs 8 GPUs (4 over its quota) on both nodes; its over-quota run "long" has
    run `hours` hours on 4 GPUs."""
    return [
        workload("mine", project="p1", gpus=4, running_on=["n1"], started_at=0.0),
        workload("long", project="p1", gpus=4, running_on=["n2"], started_at=now - hours * 3600),
    ]


def _why_ask_waits(work: list[WorkloadSpec], now: float) -> str:
    """Run a cycle in a pool that weighs lost work: nothing is reclaimed, and "ask"
    says why it waits."""
    result = run_cycle(snapshot(NODES, TWO_QUEUES, work, RECLAIM_WEIGHS, now=now))
    assert _evicted(result) == []
    return result.pending["ask"].reason


def test_a_queue_that_just_started_waiting_does_not_throw_away_hours_of_a_run() -> None:
    # reclaiming "long" would throw away 4 GPUs x 5 h = 20 GPU-hours; p2's workload has
    # waited a minute: it waits, saying why in numbers
    now = 36_000.0
    work = [
        *_p1_over_quota_for(5, now),
        workload("ask", project="p2", gpus=4, submitted_at=now - 60),
    ]
    reason = _why_ask_waits(work, now)
    assert "20.0 GPU-hours of long's run" in reason
    assert (
        "p2's waiting workloads within its fairshare have waited for room and not yet spent "
        "on reclaims" in reason
    )
    assert "(0.1 GPU-hours)" in reason
    # KAI's behaviour (the default) reclaims at once
    assert _evicted(run_cycle(snapshot(NODES, TWO_QUEUES, work, now=now))) == ["long"]


def test_the_reason_counts_every_run_a_reclaim_would_throw_away() -> None:
    # p2 asks 4 GPUs and has waited 45 min (3 GPU-hours); p1's two over-quota runs on n2
    # would lose 2 GPU-hours each: the first fits the wait, both do not
    now = 36_000.0
    work = [
        workload("mine", project="p1", gpus=4, running_on=["n1"], started_at=0.0),
        workload("a", project="p1", gpus=2, running_on=["n2"], started_at=now - 3600),
        workload("b", project="p1", gpus=2, running_on=["n2"], started_at=now - 3600),
        workload("ask", project="p2", gpus=4, submitted_at=now - 2700),
    ]
    reason = _why_ask_waits(work, now)
    assert "would throw away 4.0 GPU-hours of runs, 2.0 of them a's (p1)" in reason
    assert "more than p2's waiting workloads within its fairshare have waited for room" in reason
    assert "on reclaims (3.0 GPU-hours)" in reason


def test_a_young_run_is_reclaimed_at_once() -> None:
    now = 36_000.0
    work = [
        *_p1_over_quota_for(0.01, now),  # 36 s on 4 GPUs: 0.04 GPU-hours
        workload("ask", project="p2", gpus=4, submitted_at=now - 60),
    ]
    result = run_cycle(snapshot(NODES, TWO_QUEUES, work, RECLAIM_WEIGHS, now=now))
    assert _evicted(result) == ["long"]


def test_the_whole_queue_s_wait_pays_for_a_reclaim() -> None:
    # "long" loses 4 GPU-hours; p2 has four 1-GPU workloads waiting 1 h each: 4 GPU-hours
    now = 36_000.0
    work = [
        *_p1_over_quota_for(1, now),
        *(workload(f"ask{i}", project="p2", gpus=1, submitted_at=now - 3601) for i in range(4)),
    ]
    result = run_cycle(snapshot(NODES, TWO_QUEUES, work, RECLAIM_WEIGHS, now=now))
    assert _evicted(result) == ["long"]
    assert "ask0" not in result.pending  # the others take the freed GPUs next cycle


def test_only_the_waits_the_queue_s_fairshare_has_room_for_pay_for_a_reclaim() -> None:
    # "long" has run 1.5 h on 4 GPUs (6 GPU-hours); p2 has twelve 1-GPU workloads that
    # have waited an hour each (12 GPU-hours), but its fairshare has room for four of
    # them: what it frees would run those four, so only their 4 GPU-hours count
    now = 36_000.0
    work = [
        *_p1_over_quota_for(1.5, now),
        *(workload(f"ask{i}", project="p2", gpus=1, submitted_at=now - 3601) for i in range(12)),
    ]
    result = run_cycle(snapshot(NODES, TWO_QUEUES, work, RECLAIM_WEIGHS, now=now))
    assert _evicted(result) == []
    reason = result.pending["ask0"].reason
    assert "would throw away 6.0 GPU-hours of long's run" in reason
    assert "within its fairshare have waited for room and not yet spent" in reason
    assert "(4.0 GPU-hours)" in reason


@pytest.mark.parametrize(("ratio", "evicted"), [(1.0, ["long"]), (0.5, []), (2.0, ["long"])])
def test_the_lost_work_ratio_scales_what_a_wait_may_throw_away(
    ratio: float, evicted: list[str]
) -> None:
    # "long" loses 4 GPU-hours and p2 has waited 4 GPU-hours: enough at a ratio of 1, not
    # at 0.5 (it would throw away at most 2)
    now = 36_000.0
    work = [
        *_p1_over_quota_for(1, now),
        *(workload(f"ask{i}", project="p2", gpus=1, submitted_at=now - 3601) for i in range(4)),
    ]
    pools = [
        PoolConfig(name="default", reclaim_weighs_lost_work=True, reclaim_lost_work_ratio=ratio)
    ]
    result = run_cycle(snapshot(NODES, TWO_QUEUES, work, pools, now=now))
    assert _evicted(result) == evicted


def test_a_wait_that_paid_for_a_reclaim_is_not_spent_again() -> None:
    # p1 runs four 1-GPU runs over its quota on n2, each for an hour (1 GPU-hour lost
    # each); p2's four 1-GPU workloads have waited 30 min each: 2 GPU-hours in all,
    # which pays for two of the runs. The cycles that follow at the same moment find
    # that wait spent (the last workloads in p2's queue paid what the first ones' own
    # waits did not cover) and take nothing more
    now = 36_000.0
    work = [
        workload("mine", project="p1", gpus=4, running_on=["n1"], started_at=0.0),
        *(
            workload(f"run{i}", project="p1", gpus=1, running_on=["n2"], started_at=now - 3600)
            for i in range(4)
        ),
        *(workload(f"ask{i}", project="p2", gpus=1, submitted_at=now - 1801) for i in range(4)),
    ]
    final, results = settle(snapshot(NODES, TWO_QUEUES, work, RECLAIM_WEIGHS, now=now))
    assert sum(len(_evicted(r)) for r in results) == 2
    assert not results[-1].changed
    spent = {w.id: w.room_wait_since for w in final.workloads if w.id in ("ask2", "ask3")}
    assert spent["ask3"] == now and now - 10 < spent["ask2"] < now  # seconds of it are left
    reason = results[-1].pending["ask2"].reason
    assert "waited for room and not yet spent on reclaims (0.0 GPU-hours)" in reason


def test_a_preempted_workload_waits_from_its_eviction_not_from_its_submission() -> None:
    # "ask" was submitted 10 h ago but went back to the queue a minute ago: its wait
    # (0.07 GPU-hours) does not pay for throwing away 20 GPU-hours
    now = 36_000.0
    work = [
        *_p1_over_quota_for(5, now),
        workload("ask", project="p2", gpus=4, submitted_at=0.0, pending_since=now - 60),
    ]
    result = run_cycle(snapshot(NODES, TWO_QUEUES, work, RECLAIM_WEIGHS, now=now))
    assert _evicted(result) == []


def test_an_evicted_workload_is_pending_since_its_eviction_in_the_simulator() -> None:
    now = 600.0
    sim = simulation(NODES, TWO_QUEUES, _p1_over_quota_for(0.1, now), now=now)
    sim.submit(workload("ask", project="p2", gpus=4, submitted_at=now), now)
    sim.schedule()
    assert sim.active["long"].status == "pending"
    assert sim.active["long"].pending_since == now
