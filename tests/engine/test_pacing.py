"""Pacing and speed: bounded reclaims/preemptions per cycle, the same decisions for the
same snapshot in every process, and the benchmark's synthetic cluster."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.engine_bench import Size, synthetic_snapshot, unpaced
from scheduler_core.engine import Allocate, Evict, PoolConfig, run_cycle
from scheduler_core.engine.actions.reclaim import RECLAIM_PACED
from scheduler_core.engine.snapshot import (
    DEFAULT_MAX_PREEMPTIONS_PER_CYCLE,
    DEFAULT_MAX_RECLAIMS_PER_CYCLE,
)
from tests.engine.factories import dept, node, project, running, settle, snapshot, workload

ROOT = Path(__file__).resolve().parents[2]


def _started(result: object) -> list[str]:
    return [d.workload for d in result.decisions if isinstance(d, Allocate)]  # type: ignore[attr-defined]


def _reclaim_cluster(pool: PoolConfig):  # type: ignore[no-untyped-def]
    # p1 holds all 8 GPUs (its fair share is 4); p2 asks for four 1-GPU jobs back
    return snapshot(
        [node("n1", 8)],
        [dept("org", 8), project("p1", gpus=4), project("p2", gpus=4)],
        [workload(f"held-{i}", project="p1", running_on=["n1"]) for i in range(8)]
        + [workload(f"ask-{i}", project="p2") for i in range(4)],
        pools=[pool],
    )


def test_defaults_pace_reclaim_and_preemption() -> None:
    pool = PoolConfig(name="default")
    assert pool.max_reclaims_per_cycle == DEFAULT_MAX_RECLAIMS_PER_CYCLE > 0
    assert pool.max_preemptions_per_cycle == DEFAULT_MAX_PREEMPTIONS_PER_CYCLE > 0


def test_reclaim_is_paced_and_the_next_cycles_carry_on() -> None:
    paced = _reclaim_cluster(PoolConfig(name="default", max_reclaims_per_cycle=1))
    first = run_cycle(paced)
    assert len(_started(first)) == 1
    evicted = [d for d in first.decisions if isinstance(d, Evict)]
    assert len(evicted) == 1 and evicted[0].reason_kind == "reclaim"
    waiting = [first.pending[f"ask-{i}"] for i in range(4) if f"ask-{i}" in first.pending]
    assert len(waiting) == 3
    assert all(RECLAIM_PACED in info.reason for info in waiting)
    # the same fixed point as without the bound, a cycle or so per reclaim
    final, results = settle(paced)
    free, free_results = settle(_reclaim_cluster(PoolConfig(name="default")))
    assert sorted(running(final)) == sorted(running(free))
    assert all(f"ask-{i}" in running(final) for i in range(4))
    assert len(results) > len(free_results)
    assert not results[-1].changed  # type: ignore[attr-defined]


def test_preemption_is_paced() -> None:
    def cluster(limit: int | None):  # type: ignore[no-untyped-def]
        return snapshot(
            [node("n1", 4)],
            [dept("org", 4), project("p", gpus=4)],
            [workload(f"low-{i}", project="p", priority=40, running_on=["n1"]) for i in range(4)]
            + [workload(f"high-{i}", project="p", priority=80) for i in range(3)],
            pools=[PoolConfig(name="default", max_preemptions_per_cycle=limit)],
        )

    first = run_cycle(cluster(1))
    assert _started(first) == ["high-0"]
    assert [d.reason_kind for d in first.decisions if isinstance(d, Evict)] == ["priority"]
    final, _ = settle(cluster(1))
    free, _ = settle(cluster(None))
    assert sorted(running(final)) == sorted(running(free))
    assert all(f"high-{i}" in running(final) for i in range(3))


def test_a_cycle_decides_the_same_in_every_process() -> None:
    # string hashing differs between processes: no decision may depend on set order
    # (this cluster gave different decisions under different PYTHONHASHSEEDs before)
    code = (
        "from benchmarks.engine_bench import Size, synthetic_snapshot, unpaced\n"
        "from scheduler_core.engine import run_cycle\n"
        "import hashlib\n"
        "snap = unpaced(synthetic_snapshot(Size('T', 200, 2000, 1000, 60, 6), seed=1))\n"
        "print(hashlib.sha256(repr(run_cycle(snap)).encode()).hexdigest())\n"
    )
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_the_synthetic_first_cycle_reclaims_and_preempts_within_the_bounds() -> None:
    snap = synthetic_snapshot(Size("T", 40, 400, 200, 12, 3), seed=5)
    pools = tuple(
        dataclasses.replace(p, max_reclaims_per_cycle=3, max_preemptions_per_cycle=2)
        for p in snap.pools
    )
    paced = run_cycle(dataclasses.replace(snap, pools=pools))
    free = run_cycle(unpaced(snap))
    assert 0 < len(paced.decisions) < len(free.decisions)
    started = {d.workload for d in paced.decisions if isinstance(d, Allocate)}
    for w in snap.workloads:
        if w.id in paced.pending:
            assert w.id not in started
