"""Putting pods on nodes: node choice (binpack or spread), GPU devices, gangs.

Whole-GPU pods take wholly free devices; fractional pods share a device that already
holds fractions before a new device is opened. Binpack scans the free-capacity buckets
from the fullest node that still fits; spread from the emptiest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.resources import EPSILON, format_amount
from scheduler_core.engine.snapshot import PLACEMENT_SPREAD, PodPlacement

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import (
        GroupState,
        NodeState,
        PoolIndex,
        WorkloadState,
    )
    from scheduler_core.engine.framework.statement import Statement

Slot = tuple["NodeState", tuple[int, ...], float]


def _free_devices(node: NodeState, k: int) -> tuple[int, ...]:
    found: list[int] = []
    for i, used in enumerate(node.dev_used):
        if used <= EPSILON:
            found.append(i)
            if len(found) == k:
                break
    return tuple(found)


def find_slot(
    pool: PoolIndex,
    grp: GroupState,
    selector: dict[str, str],
    spread: bool,
    blocked: set[str] | None = None,
) -> Slot | None:
    """A node (and devices) where one pod of `grp` fits, or None; nodes named in
    `blocked` (held for another workload) are passed over."""
    g = grp.gpus
    if g <= EPSILON:
        return _cpu_slot(pool, grp, selector, spread, blocked)
    if g < 1.0 - EPSILON:
        shared = _shared_device_slot(pool, grp, selector, blocked)
        if shared is not None:
            return shared
        k = 1  # a fraction opens a new device
    else:
        k = round(g)
    return _whole_devices_slot(pool, grp, selector, spread, blocked, k)


def _usable(
    node: NodeState, grp: GroupState, selector: dict[str, str], blocked: set[str] | None
) -> bool:
    """Does `node` match `selector`, have `grp`'s CPU and memory free, and is it not
    held for another workload?"""
    if selector and not node.matches(selector):
        return False
    if not node.fits_cpu_mem(grp.cpu, grp.memory):
        return False
    return not (blocked and node.name in blocked)


def _cpu_slot(
    pool: PoolIndex,
    grp: GroupState,
    selector: dict[str, str],
    spread: bool,
    blocked: set[str] | None,
) -> Slot | None:
    """A CPU-only pod: the first ready node that fits (binpack), or the one with the
    most free CPU (spread)."""
    best: NodeState | None = None
    best_free = -1.0
    for node in pool.nodes:
        if not node.ready or not _usable(node, grp, selector, blocked):
            continue
        if not spread:
            return (node, (), 1.0)
        free = node.cap_cpu - node.used_cpu
        if free > best_free + EPSILON:
            best, best_free = node, free
    return None if best is None else (best, (), 1.0)


def _shared_device_slot(
    pool: PoolIndex, grp: GroupState, selector: dict[str, str], blocked: set[str] | None
) -> Slot | None:
    """A fractional pod on a device that already holds fractions: the one it fills
    best; None when none has room."""
    g = grp.gpus
    best_node: NodeState | None = None
    best_dev = -1
    best_left = 2.0
    for node in pool.partial.values():
        if not _usable(node, grp, selector, blocked):
            continue
        for i, used in enumerate(node.dev_used):
            if used > EPSILON and used + g <= 1.0 + EPSILON:
                left = 1.0 - used - g
                if left < best_left - EPSILON:
                    best_node, best_dev, best_left = node, i, left
    return None if best_node is None else (best_node, (best_dev,), g)


def _whole_devices_slot(
    pool: PoolIndex,
    grp: GroupState,
    selector: dict[str, str],
    spread: bool,
    blocked: set[str] | None,
    k: int,
) -> Slot | None:
    """`k` wholly free devices on one node: from the fullest node that has them
    (binpack) or the emptiest (spread)."""
    if k > pool.max_devices:
        return None
    g = grp.gpus
    order = range(pool.max_devices, k - 1, -1) if spread else range(k, pool.max_devices + 1)
    buckets = pool.buckets
    for b in order:
        for node in buckets[b].values():
            if _usable(node, grp, selector, blocked):
                return (node, _free_devices(node, k), g if g < 1.0 - EPSILON else 1.0)
    return None


def place_pods(
    session: Session,
    stmt: Statement,
    w: WorkloadState,
    pool: PoolIndex,
    counts: dict[str, int],
) -> bool:
    """Bind counts[group] more pods of each group of `w` in `pool`, all or nothing
    (on failure the caller rolls the statement back to its mark). Nodes held for
    another workload (PoolIndex.blocked_for) are passed over."""
    need = 0.0
    largest_whole = 0
    for grp in w.groups:
        k = counts.get(grp.name, 0)
        if k:
            need += grp.gpus * k
            if grp.gpus >= 1.0 - EPSILON:
                largest_whole = max(largest_whole, round(grp.gpus))
    if need > pool.free_gpus + EPSILON:
        return False
    if largest_whole and largest_whole > pool.largest_free_whole():
        return False
    spread = session.placement_of(pool.name) == PLACEMENT_SPREAD
    blocked = pool.blocked_for(w)
    for grp in w.groups:
        for _ in range(counts.get(grp.name, 0)):
            slot = find_slot(pool, grp, w.selector, spread, blocked)
            if slot is None:
                return False
            node, devices, fraction = slot
            stmt.bind(w, PodPlacement(grp.name, node.name, devices, fraction))
    if w.pool != pool.name:
        stmt.set_pool(w, pool.name)
    return True


def describe_misfit(pool: PoolIndex, w: WorkloadState, counts: dict[str, int]) -> str:
    """Why `counts` pods of `w` do not fit in `pool`, naming numbers."""
    # many pending workloads share a shape: word it once per state of the pool
    key = (
        "misfit",
        tuple((grp.gpus, grp.cpu, grp.memory, counts.get(grp.name, 0)) for grp in w.groups),
        tuple(sorted(w.selector.items())) if w.selector else (),
    )
    text = pool.cached_reason(key)
    if text is None:
        text = pool.keep_reason(key, _describe_misfit(pool, w, counts))
    return text


def _describe_misfit(pool: PoolIndex, w: WorkloadState, counts: dict[str, int]) -> str:
    need = sum(grp.gpus * counts.get(grp.name, 0) for grp in w.groups)
    free = pool.free_gpus
    if not pool.ready_nodes:
        return f"pool {pool.name} has no ready node"
    if w.selector and not pool.has_matching_node(w.selector):
        sel = ", ".join(f"{k}={v}" for k, v in sorted(w.selector.items()))
        return f"no ready node in pool {pool.name} matches node selector {sel}"
    total_pods = sum(counts.values())
    what = "gang" if total_pods > 1 else "workload"
    if need > free + EPSILON:
        return (
            f"{what} needs {format_amount(need)} GPUs on one pool; "
            f"pool {pool.name} has {format_amount(free)} free"
        )
    biggest = max((grp.gpus for grp in w.groups if counts.get(grp.name, 0)), default=0.0)
    if biggest >= 1.0 - EPSILON:
        largest = pool.largest_free_whole()
        if round(biggest) > largest:
            return (
                f"each pod needs {format_amount(biggest)} GPUs on one node; pool {pool.name} "
                f"has {format_amount(free)} free GPUs but at most {largest} on any node"
            )
    cpu = sum(grp.cpu * counts.get(grp.name, 0) for grp in w.groups)
    mem = sum(grp.memory * counts.get(grp.name, 0) for grp in w.groups)
    if cpu > EPSILON or mem > EPSILON:
        return (
            f"{what} of {total_pods} pods ({format_amount(need)} GPUs, {format_amount(cpu)} "
            f"CPU, {format_amount(mem)} GiB) does not fit on the free nodes of pool {pool.name}"
        )
    return (
        f"{what} of {total_pods} pods ({format_amount(need)} GPUs) does not fit on the free "
        f"GPUs of pool {pool.name} ({format_amount(free)} free, fragmented across nodes)"
    )
