"""Determined's fair-share policy: the pool's GPU slots are divided among active
workloads in proportion to demand x weight (demand = pods x GPUs wanted), never more
than a workload's demand, what one cannot use going to the others; whole slots, rounded
down, leftovers by largest remainder then submission order. Quotas do not apply.
Workloads above their share shrink (elastic) or are evicted (reason fairshare); those
below grow into it. A workload that can never fit in the pool (more GPUs than its ready
nodes have, or a pod that fits none of them) takes no part in the division, so it
cannot starve the others. Zero-GPU workloads are scheduled separately, FIFO."""

from __future__ import annotations

import bisect
import math

from scheduler_core.engine.actions.common import shrink_pod, try_start
from scheduler_core.engine.decisions import EVICT_FAIRSHARE
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import GroupState, PoolIndex, WorkloadState
from scheduler_core.engine.plugins.proportion.division import ShareClaim, divide
from scheduler_core.engine.policies.common import by_gpu_use, pool_workloads, start_or_explain
from scheduler_core.engine.reasons import never_fits_pool, pod_size
from scheduler_core.engine.resources import EPSILON, format_amount


def submission_order(w: WorkloadState) -> tuple[float, ...]:
    """FIFO: earlier submission, then creation order."""
    return (w.spec.submitted_at, w.spec.creation_order)


def counts_for_share(w: WorkloadState, share: float) -> dict[str, int] | None:
    """Pods per group that `share` GPU slots pay for (the gang minimum first, then extra
    pods group by group), or None when the share does not cover the minimum."""
    if w.min_gpus > share + EPSILON:
        return None
    counts = w.min_counts()
    left = share - w.min_gpus
    for grp in w.groups:
        room = grp.pods - counts[grp.name]
        if grp.gpus <= EPSILON:
            counts[grp.name] = grp.pods
            continue
        more = min(room, math.floor(left / grp.gpus + EPSILON))
        counts[grp.name] += more
        left -= more * grp.gpus
    return counts


def fair_targets(slots: float, workloads: list[WorkloadState]) -> dict[str, dict[str, int]]:
    """Pods per group each workload is entitled to (absent = nothing): the slots are
    divided (see divide); while a share does not cover its workload's gang minimum, the
    latest-submitted such workload gives its share up and the rest are divided again.
    The giving up is worked out by _give_up_in_turn, in n log n where the workloads
    come in few shapes; what it keeps is divided once more here."""
    active = _give_up_in_turn(slots, sorted(workloads, key=submission_order))
    while True:
        targets, starved = _divide_slots(slots, active)
        if starved is None:
            return targets
        active.remove(starved)


def _weight(w: WorkloadState) -> float:
    """A workload's weight in the division: demand x weight."""
    return w.max_gpus * max(0.0, w.spec.weight)


def _divide_slots(
    slots: float, active: list[WorkloadState]
) -> tuple[dict[str, dict[str, int]], WorkloadState | None]:
    """The pods each of `active` (in submission order) gets, and the latest-submitted
    one whose share does not cover its minimum (None when every share does)."""
    claims = [
        ShareClaim(
            key=w.id,
            deserved=0.0,
            requested=w.max_gpus,
            limit=math.inf,
            rank=0,
            weight=_weight(w),
            order=i,
        )
        for i, w in enumerate(active)
    ]
    shares = divide(slots, claims)
    targets: dict[str, dict[str, int]] = {}
    starved = None
    for w in active:
        counts = counts_for_share(w, shares[w.id])
        if counts is None:
            starved = w
        else:
            targets[w.id] = counts
    return targets, starved


def _give_up_in_turn(slots: float, active: list[WorkloadState]) -> list[WorkloadState]:
    """The workloads of `active` (in submission order) left once the latest-submitted
    workload whose share does not cover its minimum gives it up, again and again.

    Workloads of one kind (demand, weight and minimum) fare alike but for the leftover
    slots, which go to the earlier submitted first: so the latest of a kind is the one
    that may be short, and each round asks only the latest of every kind (_Level keeps
    the division current as workloads give up), about n log n for few kinds. A kind
    whose floor covers its minimum is left alone for good: giving up only raises the
    others' shares."""
    weights = [_weight(w) for w in active]
    if not active or any(math.isinf(x) for x in weights):
        return list(active)
    level = _Level(slots, active, weights)
    kinds: dict[tuple[int, float], list[int]] = {}
    for k, w in enumerate(active):
        kinds.setdefault((level.shape[k], w.min_gpus), []).append(k)
    open_kinds = list(kinds.values())
    while True:
        latest = -1
        still_open = []
        for members in open_kinds:
            while members and not level.alive[members[-1]]:
                members.pop()
            if not members or level.safe(members[-1]):
                continue
            still_open.append(members)
            if members[-1] > latest and level.starved(members[-1]):
                latest = members[-1]
        open_kinds = still_open
        if latest < 0:
            return [w for k, w in enumerate(active) if level.alive[k]]
        level.remove(latest)


class _Level:
    """The division of the slots among the workloads still taking part (`alive`),
    before and after rounding, kept up to date as they give up (see _give_up_in_turn)."""

    def __init__(self, slots: float, active: list[WorkloadState], weights: list[float]) -> None:
        self.slots = slots
        self.weights = weights
        self.caps = [w.max_gpus for w in active]
        self.mins = [w.min_gpus for w in active]
        self.alive = [True] * len(active)
        self.capped = [False] * len(active)
        shapes: dict[tuple[float, float], int] = {}
        self.shape = [
            shapes.setdefault((x, c), len(shapes)) for x, c in zip(weights, self.caps, strict=True)
        ]
        self.members = [0] * len(shapes)  # alive, uncapped workloads per shape
        self.shape_weight = [0.0] * len(shapes)
        self.shape_cap = [0.0] * len(shapes)
        positions: list[list[int]] = [[] for _ in shapes]
        for k, sh in enumerate(self.shape):
            self.members[sh] += 1
            self.shape_weight[sh] = weights[k]
            self.shape_cap[sh] = self.caps[k]
            positions[sh].append(k)
        # which alive, uncapped members of each shape come before a workload
        self.rank = [0] * len(active)  # its place among its shape's members
        for members in positions:
            for r, k in enumerate(members):
                self.rank[k] = r
        self.positions = positions
        self.counts = [_Counts(len(members)) for members in positions]
        caps = self.caps
        self.order = sorted(
            (k for k in range(len(active)) if weights[k] > 0),
            key=lambda k: (caps[k] - EPSILON) / weights[k],
        )
        self.cursor = 0
        self.held = 0.0  # demand of the capped workloads still taking part
        self.wsum = math.fsum(weights)  # weight of the uncapped ones

    def remove(self, k: int) -> None:
        """Workload `k` gives its share up."""
        self.alive[k] = False
        if self.capped[k]:
            self.held -= self.caps[k]
        else:
            self._leave(k)

    def _leave(self, k: int) -> None:
        """`k` no longer competes for leftover slots (it gave up or is capped)."""
        self.wsum -= self.weights[k]
        self.members[self.shape[k]] -= 1
        self.counts[self.shape[k]].add(self.rank[k], -1)

    def _before(self, sh: int, k: int) -> int:
        """Alive, uncapped members of shape `sh` submitted before workload `k`."""
        return self.counts[sh].prefix(bisect.bisect_left(self.positions[sh], k))

    def _advance(self) -> float:
        """Cap whoever now reaches its demand; the slots left for the uncapped."""
        while self.cursor < len(self.order):
            k = self.order[self.cursor]
            if not self.alive[k]:
                self.cursor += 1
                continue
            free = self.slots - self.held
            if self.wsum <= EPSILON or free * self.weights[k] / self.wsum < self.caps[k] - EPSILON:
                break
            self.capped[k] = True
            self.held += self.caps[k]
            self._leave(k)
            self.cursor += 1
        return self.slots - self.held

    def _share(self, sh: int, free: float) -> float:
        if free <= EPSILON or self.wsum <= EPSILON:
            return 0.0
        return free * self.shape_weight[sh] / self.wsum

    def safe(self, k: int) -> bool:
        """Does the floor of its share (or its whole demand) cover `k` for good?"""
        free = self._advance()
        if self.capped[k]:
            return True
        share = self._share(self.shape[k], free)
        return self.mins[k] <= math.floor(share + EPSILON) + EPSILON

    def starved(self, k: int) -> bool:
        """Is `k` short of its minimum after rounding?"""
        free = self._advance()
        if self.capped[k]:
            return False
        sh = self.shape[k]
        share = self._share(sh, free)
        floor = math.floor(share + EPSILON)
        if self.mins[k] <= floor + EPSILON:
            return False
        give = min(1.0, self.caps[k] - floor)
        if self.mins[k] > floor + give + EPSILON:
            return True
        if free <= EPSILON or share <= EPSILON or give <= EPSILON:
            return True
        mine = share - floor
        units = free
        ahead = 0  # workloads that get a leftover slot before it
        for other, count in enumerate(self.members):
            if not count:
                continue
            s = self._share(other, free)
            f = math.floor(s + EPSILON)
            units -= count * f
            if s <= EPSILON or min(1.0, self.shape_cap[other] - f) <= EPSILON:
                continue
            if s - f == mine:
                ahead += self._before(other, k)
            elif s - f > mine:
                ahead += count
        return ahead >= math.floor(units + EPSILON)


def pods_that_fit(pool: PoolIndex, grp: GroupState, selector: dict[str, str]) -> float:
    """How many pods of `grp` the ready nodes of `pool` could hold if they were empty
    (math.inf for pods that ask for nothing)."""
    room = 0.0
    for node in pool.nodes:
        if not node.ready or (selector and not node.matches(selector)):
            continue
        fit = math.inf
        if grp.gpus >= 1.0 - EPSILON:
            fit = float(node.gpus // round(grp.gpus))
        elif grp.gpus > EPSILON:
            fit = float(node.gpus * math.floor(1.0 / grp.gpus + EPSILON))
        for need, cap in ((grp.cpu, node.cap_cpu), (grp.memory, node.cap_mem)):
            if need > EPSILON and not math.isinf(cap):
                fit = min(fit, float(math.floor(cap / need + EPSILON)))
        room += fit
    return room


def never_fits(
    pool: PoolIndex,
    w: WorkloadState,
    slots: float,
    rooms: dict[tuple[object, ...], float],
) -> str | None:
    """Why `w` can never run in `pool` as its ready nodes stand, naming numbers, or None
    when it may: its gang minimum needs more GPUs than the `slots` of the pool, or more
    pods of a group than the ready nodes could hold even empty (none at all for a pod
    that fits no node). `rooms` keeps pods_that_fit by pod shape across calls."""
    if w.min_gpus > slots + EPSILON:
        return (
            f"its minimum needs {format_amount(w.min_gpus)} GPUs and the ready nodes of "
            f"the pool have {format_amount(slots)}"
        )
    selector = tuple(sorted(w.selector.items()))
    for grp in w.groups:
        shape = (grp.gpus, grp.cpu, grp.memory, selector)
        room = rooms.get(shape)
        if room is None:
            room = rooms[shape] = pods_that_fit(pool, grp, w.selector)
        if room >= grp.min_pods:
            continue
        size = pod_size(grp.gpus, grp.cpu, grp.memory)
        matching = ""
        if selector:
            matching = " matching " + ", ".join(f"{k}={v}" for k, v in selector)
        if room == 0:
            return f"a pod of {size} fits no ready node{matching}"
        return (
            f"it needs {grp.min_pods} pods of {size} at once and the ready nodes{matching} "
            f"hold at most {format_amount(room)}"
        )
    return None


def schedule_fairshare_pool(session: Session, pool: PoolIndex) -> None:
    """Run Determined's fair-share policy on one pool: pending GPU workloads that can
    never fit in it take no part in the division (they would starve the others); the
    rest are divided the pool's ready GPU slots; then zero-GPU workloads start FIFO."""
    gpu_work, zero_work = by_gpu_use(pool_workloads(session, pool))
    slots = float(sum(n.gpus for n in pool.nodes if n.ready))
    dividing = _dividing(session, pool, gpu_work, slots)
    targets = fair_targets(slots, dividing)
    ordered = sorted(dividing, key=submission_order)
    for w in ordered:
        if w.pods:
            _cut_to_target(session, pool, w, targets.get(w.id))
    for w in ordered:
        target = targets.get(w.id)
        if target is None:
            if not w.pods:
                session.set_reason(w, pool.name, "fairshare", _below_minimum(pool, w, slots))
            continue
        if w.pods or start_or_explain(session, pool, w):
            _grow_to_target(session, pool, w, target)
    for w in sorted(zero_work, key=submission_order):
        if not w.pods:
            start_or_explain(session, pool, w)


def _dividing(
    session: Session, pool: PoolIndex, gpu_work: list[WorkloadState], slots: float
) -> list[WorkloadState]:
    """The GPU workloads that take part in the division: those that run, and those
    pending that could fit the pool at all (the others are told why they never will)."""
    verdicts: dict[int, str | None] = {}  # never_fits by kind of workload
    rooms: dict[tuple[object, ...], float] = {}
    dividing = []
    for w in gpu_work:
        if not w.pods:
            if w.kind_key not in verdicts:
                verdicts[w.kind_key] = never_fits(pool, w, slots, rooms)
            why = verdicts[w.kind_key]
            if why is not None:
                session.set_reason(w, pool.name, "capacity", never_fits_pool(pool.name, why))
                continue
        dividing.append(w)
    return dividing


def _cut_to_target(
    session: Session, pool: PoolIndex, w: WorkloadState, target: dict[str, int] | None
) -> None:
    """A running workload over its fair share gives pods back down to it; one whose
    share no longer covers its minimum is evicted (when preemptible)."""
    total = sum(target.values()) if target else 0
    if target is not None and len(w.pods) <= total:
        return
    stmt = session.statement()
    if target is not None:
        while len(w.pods) > total:
            pod = shrink_pod(w)
            if pod is None:
                break
            stmt.unbind(w, pod)
        stmt.note_reason(w, f"fair share of pool {pool.name} is {total} pods")
    elif w.preemptible:
        stmt.evict(
            w,
            EVICT_FAIRSHARE,
            f"its fair share of pool {pool.name} no longer covers its minimum",
            None,
        )
    stmt.commit()


def _grow_to_target(
    session: Session, pool: PoolIndex, w: WorkloadState, target: dict[str, int]
) -> None:
    """Start pods of `w`, group by group, up to its fair share, while they fit."""
    stmt = session.statement()
    current = w.pod_counts()
    for grp in w.groups:
        for _ in range(target[grp.name] - current[grp.name]):
            if not try_start(session, stmt, w, pool, {grp.name: 1}):
                break
    stmt.commit()


def _below_minimum(pool: PoolIndex, w: WorkloadState, slots: float) -> str:
    return (
        f"its fair share of the {format_amount(slots)} GPU slots of pool "
        f"{pool.name} does not cover its minimum of {format_amount(w.min_gpus)}"
    )


class _Counts:
    """Counts of `size` slots, all 1 at first: change one, sum a prefix, in log n (a
    Fenwick tree)."""

    def __init__(self, size: int) -> None:
        self.tree = [0] * (size + 1)
        for i in range(1, size + 1):
            self.tree[i] += 1
            parent = i + (i & -i)
            if parent <= size:
                self.tree[parent] += self.tree[i]

    def add(self, i: int, delta: int) -> None:
        """Add `delta` to slot `i`."""
        i += 1
        while i < len(self.tree):
            self.tree[i] += delta
            i += i & -i

    def prefix(self, n: int) -> int:
        """The sum of the first `n` slots."""
        total = 0
        while n > 0:
            total += self.tree[n]
            n -= n & -n
        return total
