"""Consolidate: when a preemptible pending workload would fit in the pool's idle GPUs
but no node has room (fragmentation), simulate moving preemptible workloads in memory
and commit only if the pending one and every moved workload are placed at once.

A move restarts the moved pods, so it throws their run so far away. In a pool that
weighs it (`consolidation_weighs_lost_work`), the workloads that lose least are moved
first, and a move is made only while the work it throws away is no more than the
GPU-time the job has waited for room (lost_work.move_is_worth_it); a workload with a
pod as wide as the job's widest is never moved (wherever that pod could go, the job's
could have gone), and one whose room the job did not take stays where it was.
Otherwise (KAI's behaviour, FORMAT.md v1.2's default) the running workloads are taken
one more at a time in victim order (lowest priority, then the most recent, first), the
first set that lets the job and every moved workload be placed is applied (one of the
set whose room the job did not take stays where it was), and a move costs nothing to
the decision. A pool with `consolidation_within_quota` moves pods for a job beyond its
project's or department's deserved quota only when the pods moved are borrowed too (their
project holds more than its deserved quota) and the move throws away at most
BEYOND_QUOTA_MOVE_SHARE of the GPU-time the job has waited for room."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from scheduler_core.engine.actions.common import (
    in_queue_order,
    pending_for_pool,
    pods_fit_back,
    quota_pools,
    try_start,
)
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex, WorkloadState
from scheduler_core.engine.framework.statement import Statement
from scheduler_core.engine.lost_work import lost_gpu_seconds, move_is_worth_it, waited_gpu_seconds
from scheduler_core.engine.placement import place_pods
from scheduler_core.engine.resources import EPSILON
from scheduler_core.engine.snapshot import PodPlacement

BEYOND_QUOTA_MOVE_SHARE = 1 / 30
"""In a pool that moves pods for work within quota (`consolidation_within_quota`), the
share of its wait a move for work beyond quota may throw away. Such work runs on GPUs
lent while their owners do not ask for them, so moves for it are kept to the cheap ones
that free whole nodes otherwise left idle: on the eight busiest days of the Philly trace
at 48 nodes, 1/30 changes nothing but one day's makespan (51.2 h to 51.1), where 1/10
already costs a day fairness (0.010 to 0.013); it lets a 32-GPU cluster move a 1-GPU run
of 20 minutes for an 8-GPU job that waited 1.6 hours (README, Slurm's benchmark)."""


def consolidate(session: Session) -> None:
    """Defragment pools where consolidation is on, within the evaluation budget."""
    for pool in quota_pools(session, flag="consolidation"):
        budget = [pool.config.max_consolidation_evaluations]
        jobs = [
            w
            for w in pending_for_pool(session, pool.name)
            if w.preemptible and session.gang_request(w)[0] <= pool.free_gpus + EPSILON
        ]
        if not jobs or budget[0] <= 0:
            continue
        failed: set[tuple[object, ...]] = set()
        in_queue_order(
            session, pool.name, jobs, partial(_attempt, session, pool, budget=budget, failed=failed)
        )


@dataclass(frozen=True, slots=True)
class _Target:
    """What a pending job needs room made for: its pods per group, its shape (what the
    cycle's failures are remembered by), its widest pod, whether only borrowed pods may
    move for it, and the GPU-time a move may throw away."""

    counts: dict[str, int]
    shape: tuple[object, ...]
    widest: int
    borrowed_only: bool
    allowance: float


def _lost(session: Session, v: WorkloadState) -> float:
    """GPU-seconds moving `v` throws away."""
    return lost_gpu_seconds(v.spec, session.now, v.allocated()[0])


def _victim_groups(
    session: Session, pool: PoolIndex, job: WorkloadState, target: _Target
) -> list[list[WorkloadState]]:
    """The workloads to move, as groups added one after the other: each evaluation
    moves every group so far (only borrowed ones for a target that says so: workloads
    of projects holding more than their deserved quota). Weighing lost work (a finite
    allowance): per node, see _groups_by_node. Otherwise (FORMAT v1.2, KAI): one
    workload at a time, in victim order (lowest priority, then the most recent, first)."""
    if not math.isinf(target.allowance):
        return _groups_by_node(session, pool, job, target)
    return [
        [v]
        for v in _in_victim_order(session, pool)
        if not target.borrowed_only or _borrowed(session, pool, v)
    ]


def _borrowed(session: Session, pool: PoolIndex, v: WorkloadState) -> bool:
    """Does `v`'s project hold more than its deserved quota in `pool`?"""
    return session.spare_gpus(v.project, pool.name) > EPSILON


def _in_victim_order(session: Session, pool: PoolIndex) -> list[WorkloadState]:
    """The running workloads of `pool` that may be moved, in victim order; worked out
    once for the jobs tried until something commits."""
    mark = ("consolidation victims", pool.name)
    return session.alike(
        mark,
        lambda: sorted(
            (v for v in session.running_by_pool[pool.name].values() if _movable(session, v)),
            key=session.victim_key,
        ),
    )


def _movable(session: Session, v: WorkloadState) -> bool:
    """May the running workload `v` be moved: preemptible, every pod on a ready node,
    not protected from eviction?"""
    return (
        v.preemptible
        and all(session.nodes[p.node].state == "ready" for p in v.pods)
        and session.protection(v) is None
    )


def _groups_by_node(
    session: Session, pool: PoolIndex, job: WorkloadState, target: _Target
) -> list[list[WorkloadState]]:
    """Per node, the movable workloads that must leave it so that it has `widest` whole
    GPUs free: those that lose least first (then smaller ones), nodes whose group loses
    least first (then those closest to having room); a workload stays whose move alone
    would lose more than `allowance` GPU-seconds or which has a pod here as wide as the
    job's widest (see _as_wide)."""
    widest, allowance = target.widest, target.allowance
    nodes = sorted(
        (n for n in pool.nodes if n.ready and n.workloads and n.gpus >= widest),
        key=lambda n: (-n.free_gpus(), n.index),
    )
    seen: set[str] = set()
    groups: list[tuple[float, int, list[WorkloadState]]] = []
    for node in nodes:
        here = [
            (_lost(session, session.workloads[wid]), session.workloads[wid])
            for wid in node.workloads
        ]
        here.sort(key=lambda t: (t[0], t[1].allocated()[0], t[1].spec.creation_order))
        free = node.free_whole
        group: list[WorkloadState] = []
        cost = 0.0
        for lost, v in here:
            if free >= max(widest, 1):
                break
            if v.id in seen or v is job or v.pool != pool.name or not _movable(session, v):
                continue
            if target.borrowed_only and not _borrowed(session, pool, v):
                continue
            if _as_wide(v, node.name, widest) or not move_is_worth_it(lost, allowance):
                continue
            seen.add(v.id)
            group.append(v)
            cost += lost
            free += sum(
                len(p.devices) for p in v.pods if p.node == node.name and p.gpu_fraction >= 1.0
            )
        if group:
            groups.append((cost, len(groups), group))
    groups.sort(key=lambda t: (t[0], t[1]))
    return [group for _, _, group in groups]


def _as_wide(v: WorkloadState, node: str, widest: int) -> bool:
    """Does `v` have a pod on `node` at least as wide as the job's widest pod? Moving
    it frees no room the job could not have used directly: wherever the pod can go, the
    job's pod could have gone."""
    return widest > 1 and any(
        p.node == node and p.gpu_fraction >= 1.0 and len(p.devices) >= widest for p in v.pods
    )


class _Slots:
    """A necessary condition for placing pods of whole-GPU widths once the moved
    workloads' GPUs are free as well, kept up to date as pods and freed GPUs are added:
    for every width m, the pods of at least m GPUs need no more room than the ready
    nodes have m-GPU slots for (a node with f free GPUs holds at most f // m of them).
    It rules out, without simulating, moves that only shift a pod too wide to share a
    node from one node to another. Adding costs O(widths) per pod (few distinct widths:
    node sizes), so trying victims one at a time stays linear in them."""

    def __init__(self, pool: PoolIndex, widths: list[int]) -> None:
        self._free = {n.name: n.free_whole for n in pool.nodes if n.ready}
        self._pods: dict[int, int] = {}  # width -> pods of that width
        self._slots: dict[int, int] = {}  # width -> slots of that width on ready nodes
        for width in widths:
            self.add_pod(width)

    def add_pod(self, width: int) -> None:
        """One more whole-GPU pod of `width` GPUs to place."""
        if width < 1:
            return
        if width not in self._slots:
            self._slots[width] = sum(f // width for f in self._free.values())
        self._pods[width] = self._pods.get(width, 0) + 1

    def free(self, node: str, gpus: int) -> None:
        """`gpus` more whole GPUs free on `node` (nothing for a node that is not ready)."""
        f = self._free.get(node)
        if f is None:
            return
        for m in self._slots:
            self._slots[m] += (f + gpus) // m - f // m
        self._free[node] = f + gpus

    def suffice(self) -> bool:
        """Could the pods fit, as far as whole-GPU slots go?"""
        for m, slots in self._slots.items():
            need = sum(n for width, n in self._pods.items() if width >= m)
            if slots < need:
                return False
        return True


def _target(
    session: Session, pool: PoolIndex, job: WorkloadState, failed: set[tuple[object, ...]]
) -> _Target | None:
    """The job's target, or None when no move can start it in this cycle."""
    counts = session.gang_counts(job)
    # a shape that could not be made room for will not fit later in this cycle either;
    # one that failed with every movable run to choose from fails with borrowed ones too
    base = (
        tuple((g.gpus, g.cpu, g.memory, counts.get(g.name, 0)) for g in job.groups),
        tuple(sorted(job.selector.items())),
    )
    if (*base, False) in failed:
        return None
    need = sum(g.gpus * counts.get(g.name, 0) for g in job.groups)
    if need > pool.free_gpus + EPSILON:
        return None
    request = list(job.request_of(counts))
    if session.admission_problem(job, pool.name, request) is not None:
        return None
    beyond = bool(pool.config.consolidation_within_quota) and _borrows(session, pool, job, request)
    shape = (*base, beyond)
    widest = max(
        (round(g.gpus) for g in job.groups if counts.get(g.name) and g.gpus >= 1.0), default=1
    )
    if shape in failed or widest > pool.max_devices:  # (no node can ever hold such a pod)
        return None
    # the GPU-time the job has waited for room: what a move may throw away to start it now
    allowance = (
        waited_gpu_seconds(job.spec, need, session.now)
        if pool.config.consolidation_weighs_lost_work
        else math.inf
    )
    if beyond:
        allowance *= BEYOND_QUOTA_MOVE_SHARE
    return _Target(counts, shape, widest, beyond, allowance)


def _attempt(
    session: Session,
    pool: PoolIndex,
    job: WorkloadState,
    budget: list[int],
    failed: set[tuple[object, ...]],
) -> None:
    if job.pods or budget[0] <= 0:
        return
    target = _target(session, pool, job, failed)
    if target is None:
        return
    groups = _victim_groups(session, pool, job, target)
    chosen: list[WorkloadState] = []
    # the whole-GPU slots of each evaluation: the job's pods and the moved ones' to place,
    # the GPUs the moved ones free
    slots = _Slots(
        pool,
        [
            round(g.gpus)
            for g in job.groups
            if g.gpus >= 1.0
            for _ in range(target.counts.get(g.name, 0))
        ],
    )
    for group in groups:
        if budget[0] <= 0:
            return
        chosen.extend(group)
        for v in group:
            for p in v.pods:
                if p.gpu_fraction >= 1.0:
                    slots.add_pod(len(p.devices))
                    slots.free(p.node, len(p.devices))
        if not slots.suffice():
            continue  # cannot succeed: no need to simulate it (nor to spend budget)
        budget[0] -= 1
        outcome = _evaluate(session, pool, job, target, chosen)
        if outcome is not None:
            return  # committed, or not worth it: more groups only move more
    failed.add(target.shape)


def _evaluate(
    session: Session,
    pool: PoolIndex,
    job: WorkloadState,
    target: _Target,
    chosen: list[WorkloadState],
) -> bool | None:
    """Simulate moving `chosen` to start `job`: True when committed, False when it
    works but throws away more than the target allows (the job may wait, and earn
    more), None when it does not work."""
    stmt = session.statement()
    before = {v.id: (tuple(v.pods), v.pod_counts()) for v in chosen}
    for v in chosen:
        for pod in list(reversed(v.pods)):
            stmt.unbind(v, pod)
    ok = try_start(session, stmt, job, pool, target.counts)
    if ok:
        placed = stmt.mark()
        # a workload of the set whose room the job did not take stays where it is
        ok = _place_again(session, stmt, pool, chosen, before, stay_first=True)
        if not ok:  # staying put took room another one needed
            stmt.rollback(placed)
            ok = _place_again(session, stmt, pool, chosen, before, stay_first=False)
    if not ok:
        stmt.discard()
        return None
    moved = [v for v in chosen if sorted(v.pods, key=repr) != sorted(before[v.id][0], key=repr)]
    # a moved workload holds as many GPUs as before and keeps its start in the session
    if not math.isinf(target.allowance) and not move_is_worth_it(
        sum(_lost(session, v) for v in moved), target.allowance
    ):
        stmt.discard()
        return False
    for v in moved:
        stmt.mark_moved(v)
    stmt.commit()
    return True


def _borrows(session: Session, pool: PoolIndex, job: WorkloadState, request: list[float]) -> bool:
    """Would `job` run beyond its project's or department's deserved quota? In a pool
    that moves pods for work within quota, only borrowed pods may then move for it, and
    cheaply; while it waits, it says so."""
    for queue, level in ((job.project, "project"), (job.department, "department")):
        beyond = session.beyond_deserved(queue, level, pool.name, request)
        if beyond is not None:
            session.keep_note(
                job,
                pool.name,
                f"no pods are moved for it: {beyond}, and pool {pool.name} moves running "
                "pods for work beyond quota only when they run beyond their own quota and "
                f"the move throws away at most 1/{round(1 / BEYOND_QUOTA_MOVE_SHARE)} of "
                "the GPU-time it has waited",
            )
            return True
    return False


def _place_again(
    session: Session,
    stmt: Statement,
    pool: PoolIndex,
    chosen: list[WorkloadState],
    before: dict[str, tuple[tuple[PodPlacement, ...], dict[str, int]]],
    *,
    stay_first: bool,
) -> bool:
    """Place the workloads taken off their nodes again, once the job is placed, larger
    ones first. With `stay_first`, those whose own devices the job left free first go
    back where they were, those that lose most first: they were taken off in case their
    room was needed, it was not, and they are not moved (nor restarted)."""
    rest = chosen
    if stay_first:
        rest = []
        for v in sorted(chosen, key=lambda x: (-_lost(session, x), x.spec.creation_order)):
            pods = before[v.id][0]
            if pods_fit_back(session, v, pods):
                for pod in pods:
                    stmt.bind(v, pod)
            else:
                rest.append(v)
    for v in sorted(rest, key=lambda x: (-sum(before[x.id][1].values()), x.spec.creation_order)):
        if not place_pods(session, stmt, v, pool, before[v.id][1]):
            return False
    return True
