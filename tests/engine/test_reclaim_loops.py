"""Reclaim loops the property tests (test_properties.py) found.

Fixed: cycles that run at the same instant (a simulation step) order victims as cycles a
moment apart would: a run started in a later cycle is the more recent one, so it is
taken first. It showed as a ping-pong: a queue
within its deserved quota reclaimed a gang straddling another queue's deserved line to
place a quarter of a GPU; its next workload took the freed GPUs over its fair share;
the gang's queue took back that workload and, before it, the quarter GPU (the older of
the two by creation, though both had started at the same instant), which let the first
reclaim happen again, forever. Taking the later run first leaves the quarter GPU within
its queue's deserved quota (FORMAT.md: protected), so the gang waits."""

from __future__ import annotations

import dataclasses

import pytest

from scheduler_core.engine import (
    PodGroupSpec,
    PoolConfig,
    Resources,
    WorkloadSpec,
    run_until_stable,
)
from tests.engine.factories import dept, node, project, simulation, snapshot


def _pending(name: str, queue: str, *gpus: float, priority: int = 40) -> WorkloadSpec:
    groups = tuple(PodGroupSpec(name=f"g{i}", request=Resources(g)) for i, g in enumerate(gpus))
    order = int(name[1:])
    return WorkloadSpec(
        id=name,
        project=queue,
        groups=groups,
        priority=priority,
        node_selector={"zone": "x"},
        creation_order=order,
    )


def test_a_straddling_gang_and_a_fraction_do_not_reclaim_each_other_forever() -> None:
    nodes = [
        node("n0", 7, labels={"zone": "x"}),
        node("n1", 1, labels={"zone": "x"}, state="cordoned"),
    ]
    queues = [dept("d0"), project("p0", "d0", gpus=1), project("p1", "d0", gpus=6)]
    work = [
        _pending("w0", "p0", 0.5),
        _pending("w1", "p0", 1.0),
        _pending("w2", "p1", 2.0, 4.0),
        _pending("w3", "p0", 0.0),
        _pending("w4", "p0", 0.0),
        _pending("w5", "p0", 0.25),
        _pending("w6", "p1", 0.5, priority=50),
    ]
    final, results = run_until_stable(snapshot(nodes, queues, work))
    assert not results[-1].changed
    # the cluster settles at once (queue order as a tree, FORMAT v1.2, starts p0's work
    # before the gang) or after the gang is taken back once
    assert len(results) <= 4
    running = {w.id for w in final.workloads if w.pods}
    assert running == {"w0", "w1", "w3", "w4", "w5", "w6"}
    assert "w2" in results[-1].pending


@pytest.mark.xfail(strict=True, reason="known reclaim loop through an elastic pod, not fixed yet")
def test_an_elastic_pod_and_a_straddling_gang_do_not_reclaim_each_other_forever() -> None:
    """A known loop, found by the property tests after the fix above, that happens with
    the clock moving too: p0, within its deserved quota, reclaims p1's straddling gang
    (6 GPUs) for the next quarter-GPU pod of its elastic w1; p0's w0 (2 GPUs) then takes
    freed GPUs over p0's fair share; p1 reclaims them back, shrinking w1 first (FORMAT.md:
    elastic workloads shrink before anything is taken whole) and then taking w0, which
    straddles p0's deserved line, so p0 drops below it and reclaims the gang again.
    Each step follows FORMAT.md's rules; what should stop the loop is not decided."""
    nodes = [
        node("n0", 7, labels={"zone": "x"}),
        node("n1", 1, labels={"zone": "x"}, state="cordoned"),
    ]
    queues = [dept("d0"), project("p0", "d0", gpus=1), project("p1", "d0", gpus=6)]
    elastic = WorkloadSpec(
        id="w1",
        project="p0",
        groups=(
            PodGroupSpec(name="g0", pods=2, min_pods=1, request=Resources(0.25)),
            PodGroupSpec(name="g1", request=Resources(0.0)),
        ),
        priority=40,
        node_selector={"zone": "x"},
        creation_order=1,
    )
    work = [
        _pending("w0", "p0", 2.0),
        elastic,
        _pending("w2", "p1", 2.0, 4.0),
        _pending("w3", "p0", 0.0),
        _pending("w4", "p0", 0.0),
        _pending("w5", "p0", 0.25),
        _pending("w6", "p1", 0.5, priority=50),
    ]
    snap = snapshot(nodes, queues, work, [PoolConfig(name="default", consolidation=False)])
    _, results = run_until_stable(snap)
    assert not results[-1].changed


def test_a_simulation_marks_each_run_with_the_cycle_that_started_it() -> None:
    """The simulation's steps order runs as run_until_stable does: a run started in
    the n-th cycle of an instant carries that cycle (not the next one's number, which
    would tie it with the runs of that next cycle)."""
    nodes, queues = [node("n1", 8)], [dept("org", 8), project("p", gpus=8)]
    first = WorkloadSpec(id="w1", project="p", groups=(PodGroupSpec(request=Resources(4)),))
    sim = simulation(nodes, queues)
    sim.submit(first, None)
    sim.schedule()  # cycle 0 starts it, cycle 1 decides nothing
    sim.submit(dataclasses.replace(first, id="w2", creation_order=1), None)
    sim.schedule()  # cycle 2 starts the second one
    assert {w.id: w.started_cycle for w in sim.active.values()} == {"w1": 0, "w2": 2}
    final, _ = run_until_stable(snapshot(nodes, queues, [first]))
    assert [w.started_cycle for w in final.workloads] == [0]
