"""Reserve: hold nodes for a gang that waits for scattered GPUs (reserve_for_gangs).

Slurm's backfill reservation without known run times. In a pool with the setting on,
before anything is allocated, the first pending workload of each queue that needs
several GPUs and does not fit is a candidate when the pool has enough free GPUs but
on the wrong nodes (fragmentation) or, its queue staying within its fairshare with it,
when they are taken. The best of them in queue order (at most MAX_RESERVATIONS per pool)
gets the fewest nodes that hold it once drained, likeliest to drain first (see
_node_order). Until it starts, no other workload's pod is placed on them (placement
passes them over: PoolIndex.blocked_for), so they drain as their pods finish and it
starts there without moving or evicting anything (consolidation and reclaim may still
start it sooner). A workload kept off them that would fit the free GPUs with them
waits for the gang rather than reclaim room elsewhere (waits_for_hold): the room comes
back once the gang starts. Priority preemption does not wait: a more important workload
evicts its own queue's less important work elsewhere (never on held nodes) rather than
wait behind another queue's gang. The engine keeps no state between cycles: the holds
are chosen again every cycle, and since held nodes only drain, the same choice comes
back."""

from __future__ import annotations

from functools import partial

from scheduler_core.engine.actions.common import ask_kind, fits_now, quota_pools
from scheduler_core.engine.actions.queue_tree import QueueTree
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import NodeState, PoolIndex, WorkloadState
from scheduler_core.engine.reasons import held_for_other
from scheduler_core.engine.resources import EPSILON

MAX_RESERVATIONS = 1
"""Gangs a pool holds nodes for per cycle: one keeps the nodes held few, so that the
small workloads behind it still find room."""

HOLD_WHEN_TAKEN = True
"""Hold nodes also for a gang whose queue is within its fairshare but for which the pool
has too few free GPUs in all (they are taken), not only for a fragmented pool."""


def reserve(session: Session) -> None:
    """Choose the held nodes of every pool where reserve_for_gangs is on."""
    for pool in quota_pools(session, flag="reserve_for_gangs"):
        pool.reserved.clear()
        for w in _candidates(session, pool)[:MAX_RESERVATIONS]:
            nodes = _closest_nodes(session, pool, w)
            for node in nodes:
                pool.reserved[node.name] = w


def _heads(session: Session, pool: PoolIndex) -> list[WorkloadState]:
    """The first pending workload of each queue (project) that may run in `pool`."""
    heads: dict[str, WorkloadState] = {}
    for w in session.pending_workloads():
        if pool.name not in session.candidate_pools(w):
            continue
        best = heads.get(w.project)
        if best is None or session.job_key(w) < session.job_key(best):
            heads[w.project] = w
    return list(heads.values())


def _whole_gpus(session: Session, w: WorkloadState) -> list[int]:
    """The whole GPUs of each pod of the gang of `w` (fractional and CPU pods left out:
    they fit in the gaps)."""
    counts = session.gang_counts(w)
    return [
        round(g.gpus) for g in w.groups if g.gpus >= 1.0 - EPSILON for _ in range(counts[g.name])
    ]


def _candidates(session: Session, pool: PoolIndex) -> list[WorkloadState]:
    """The queue heads nodes may be held for, best first in queue order."""
    found: list[WorkloadState] = []
    for w in _heads(session, pool):
        if sum(_whole_gpus(session, w)) < 2:
            continue
        request = session.gang_request(w)
        if session.admission_problem(w, pool.name, request) is not None:
            continue
        if fits_now(session, pool, w, session.gang_counts(w)):
            continue
        if request[0] > pool.free_gpus + EPSILON and (
            not HOLD_WHEN_TAKEN or session.over_fairshare(w.project, pool.name, request)
        ):
            continue
        found.append(w)
    tree = QueueTree(session, pool.name, found, session.gang_request, session.job_key)
    return list(iter(tree.pop, None))


def _node_order(session: Session, node: NodeState) -> tuple[float, ...]:
    """Likeliest to drain first: the node whose longest-running pod started last (run
    times are heavy-tailed: a run that has lasted long tends to last longer, so a node
    with one old run drains later than one full of young ones; on the Philly trace this
    order beat fewest GPUs in use), then fewest GPUs in use, then node order. An idle
    node comes first."""
    starts = (session.workloads[wid].spec.started_at for wid in node.workloads)
    oldest = min((session.now if t is None else t for t in starts), default=session.now)
    return (-oldest, node.gpus - node.free_whole, node.index)


def _closest_nodes(session: Session, pool: PoolIndex, w: WorkloadState) -> list[NodeState]:
    """The fewest nodes, closest to being free first, that hold the gang of `w` once
    drained; none when the pool's eligible nodes cannot."""
    widths = sorted(_whole_gpus(session, w), reverse=True)
    widest = widths[0] if widths else 1
    eligible = sorted(
        (
            n
            for n in pool.nodes
            if n.ready
            and n.gpus >= widest
            and n.name not in pool.reserved
            and (not w.selector or n.matches(w.selector))
        ),
        key=lambda n: _node_order(session, n),
    )
    chosen: list[NodeState] = []
    for node in eligible:
        chosen.append(node)
        if _holds([n.gpus for n in chosen], widths):
            return chosen
    return []


def _holds(capacities: list[int], widths: list[int]) -> bool:
    """Do pods of `widths` GPUs (widest first) fit nodes of `capacities`, first fit?"""
    left = list(capacities)
    for width in widths:
        for i, room in enumerate(left):
            if room >= width:
                left[i] = room - width
                break
        else:
            return False
    return True


def held_for_others(pool: PoolIndex, w: WorkloadState) -> str | None:
    """Why `w` is kept off the held nodes, naming them and the gang they wait for
    (None when nothing is held from it)."""
    blocked = pool.blocked_for(w)
    if not blocked:
        return None
    by_owner: dict[str, tuple[WorkloadState, list[str]]] = {}
    for name, owner in pool.reserved.items():
        if name in blocked:
            by_owner.setdefault(owner.id, (owner, []))[1].append(name)
    return "; ".join(_held_words(owner, names) for owner, names in by_owner.values())


def _held_words(owner: WorkloadState, names: list[str]) -> str:
    what = "gang" if sum(g.min_pods for g in owner.groups) > 1 else "workload"
    return held_for_other(names, what, owner.name, owner.min_gpus)


def waits_for_hold(
    session: Session, pool: PoolIndex, w: WorkloadState, counts: dict[str, int]
) -> bool:
    """Does `w` only wait because nodes are held for another gang (it would fit the
    free GPUs with them)? Then it evicts nothing for room it will have once the gang
    starts: its reason says which nodes are held."""
    held = held_reason(session, pool, w, counts)
    if held is None:
        return False
    session.set_reason(w, pool.name, "capacity", held)
    return True


def held_reason(
    session: Session, pool: PoolIndex, w: WorkloadState, counts: dict[str, int]
) -> str | None:
    """Why `w` waits for nodes held for other gangs (it would fit the free capacity
    with them), or None. Shared by alike workloads while nothing commits."""
    if not pool.reserved:
        return None
    return session.alike(
        ("waits for hold", pool.name, *ask_kind(w), pool.hold_key(w)),
        partial(_held_reason, session, pool, w, counts),
    )


def _held_reason(
    session: Session, pool: PoolIndex, w: WorkloadState, counts: dict[str, int]
) -> str | None:
    held = held_for_others(pool, w)
    if held is None or not _fits_without_holds(session, pool, w, counts):
        return None
    return held


def _fits_without_holds(
    session: Session, pool: PoolIndex, w: WorkloadState, counts: dict[str, int]
) -> bool:
    """Would `w` fit the free capacity if no node were held?"""
    reserved = pool.reserved
    pool.reserved = {}
    try:
        return fits_now(session, pool, w, counts)
    finally:
        pool.reserved = reserved
