"""The proportion plugin (KAI-Scheduler's proportion): hierarchical quotas and
fairshare. At session open it works out every queue's figures (figures.py); then it
answers the session's queue hooks: queue order, whether a queue is over its fairshare or
within its deserved quota, admission (limits, and the in-quota rule of non-preemptible
work), whether a queue may give resources back to a reclaimer, and the queue figures
of the cycle's result."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from scheduler_core.engine.decisions import QueueStatus
from scheduler_core.engine.framework.plugin import Plugin, register
from scheduler_core.engine.framework.queue_hooks import QueueHooks
from scheduler_core.engine.plugins.proportion.figures import QueueFigures
from scheduler_core.engine.reasons import (
    LIMIT,
    RESOURCE_WORDS,
    no_over_quota_share,
    straddled_quota,
)
from scheduler_core.engine.resources import EPSILON, UNLIMITED, Resources, format_amount
from scheduler_core.engine.snapshot import KIND_INTERACTIVE

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from scheduler_core.engine.framework.session import Key, Session, Vec
    from scheduler_core.engine.framework.state import WorkloadState

_ZERO = (0.0, 0.0, 0.0)
_NOT_MEASURED = (UNLIMITED, UNLIMITED, UNLIMITED)
_NO_SHARE = 1e6
"""Queue order: what a queue holds of a resource it is entitled to none of counts this
many times over (KAI's penalty for using resources without an allocatable share)."""


def _part(used: float, whole: float) -> float:
    """The share `used` is of `whole`, what a queue is entitled to of one resource (see
    ProportionPlugin._entitled_of): 0 where that is not measured, and a heavy penalty
    for using a resource it is entitled to none of."""
    if whole > EPSILON:
        return used / whole if whole != UNLIMITED else 0.0
    return used * _NO_SHARE if used > EPSILON else 0.0


_ZERO_RESOURCES = Resources(0.0, 0.0, 0.0)


def _res(v: Iterable[float]) -> Resources:
    g, c, m = v
    if g == 0.0 and c == 0.0 and m == 0.0:
        return _ZERO_RESOURCES  # most queues of most pools (Resources is immutable)
    return Resources(g, c, m)


@register
class ProportionPlugin(Plugin):
    """Queues are ordered by fairshare, quota, rank, share of what they are entitled to
    and age; a queue over its fairshare may not reclaim, and gives back what it holds
    above it."""

    name = "proportion"

    def __init__(self) -> None:
        self._session: Session | None = None
        self._figures: QueueFigures | None = None
        # the session's allocation vectors per (queue, pool), kept current as pods bind
        self._acc: dict[Key, Vec] = {}
        self._acc_np: dict[Key, Vec] = {}
        self._fair: dict[Key, Vec] = {}
        self._deserved: dict[Key, Vec] = {}
        self._entitled: dict[Key, tuple[float, float, float]] = {}

    def queue_hooks(self) -> QueueHooks:
        return self

    def on_session_open(self, session: Session) -> None:
        figures = QueueFigures(session)
        self._session = session
        self._figures = figures
        self._acc = session.acc
        self._acc_np = session.acc_np
        self._fair = figures.fair
        self._deserved = figures.deserved
        self._entitled = {}

    def on_session_close(self) -> None:
        self._session = None
        self._figures = None
        self._acc = {}
        self._acc_np = {}

    @property
    def session(self) -> Session:
        """The open session."""
        assert self._session is not None, "the session is not open"
        return self._session

    @property
    def figures(self) -> QueueFigures:
        """The figures worked out when the session opened."""
        assert self._figures is not None, "the session is not open"
        return self._figures

    # ------------------------------------------------------------ queue order
    def queue_order_key(
        self, queue: str, w: WorkloadState, pool: str, extra: Vec
    ) -> tuple[object, ...]:
        """Order of `queue` (a department or a project) serving `w`, which takes `extra`
        (smaller first; FORMAT v1.2's queue order, one level of the tree): within its
        fairshare, then within its deserved quota (with `extra`), higher rank; then a
        queue entitled to none of a resource `w` asks for comes last; then the share of
        what it is entitled to (see _entitled_of) with `extra`, the same share without
        it, the smaller entitlement, and the older queue."""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        fair = self._fair.get(key, _ZERO)
        des = self._deserved.get(key, _ZERO)
        ent = self._entitled.get(key) or self._entitled_of(key)
        over = outside = unentitled = False
        share = share_without = 0.0
        for i in (0, 1, 2):
            a = acc[i]
            e = extra[i]
            used = a + e
            whole = ent[i]
            if e > EPSILON:
                if des[i] != UNLIMITED:
                    over = over or used > fair[i] + EPSILON
                    outside = outside or used > des[i] + EPSILON
                unentitled = unentitled or whole <= EPSILON
            if whole == UNLIMITED:
                continue  # not measured
            # _part, inline: this runs for every queue a job is ordered against
            if whole > EPSILON:
                with_it, without = used / whole, a / whole
            else:
                with_it = used * _NO_SHARE if used > EPSILON else 0.0
                without = a * _NO_SHARE if a > EPSILON else 0.0
            if with_it > share:
                share = with_it
            if without > share_without:
                share_without = without
        q = self.session.queues.get(queue)
        return (
            over,
            outside,
            -(q.rank if q else 0),
            unentitled,
            round(share, 9),
            round(share_without, 9),
            ent,
            q.creation_order if q else 0,
        )

    def victim_queue_key(self, queue: str, pool: str, minus: Sequence[float]) -> tuple[object, ...]:
        """Order in which queues (of one level) give up a running workload holding
        `minus` to a reclaimer (smaller first): KAI-Scheduler's victim queue order, the
        reverse of queue order. A queue over its fairshare first, then one over its
        deserved quota, the lower rank, then the largest share of what it is entitled
        to once `minus` is taken, then the largest share now; the newer queue breaks
        exact ties."""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, UNLIMITED, UNLIMITED))
        ent = self._entitled.get(key) or self._entitled_of(key)
        over_des = any(math.isfinite(des[i]) and acc[i] > des[i] + EPSILON for i in range(3))
        after = max(_part(acc[i] - minus[i], ent[i]) for i in range(3))
        now = max(_part(acc[i], ent[i]) for i in range(3))
        q = self.session.queues.get(queue)
        return (
            not self.above_fairshare(queue, pool),
            not over_des,
            q.rank if q else 0,
            -round(after, 9),
            -round(now, 9),
            -(q.creation_order if q else 0),
        )

    def _entitled_of(self, key: Key) -> tuple[float, float, float]:
        """What queue and pool `key` is entitled to per resource, the measure of queue
        order: min(max(deserved, fairshare), limit), the pool's capacity where that is
        unlimited (UNLIMITED where the capacity is too: not measured). Worked out when
        first asked for (a cycle orders the queues of few pools) and kept."""
        fair = self._fair.get(key)
        if fair is None:
            return _NOT_MEASURED
        des = self._deserved[key]
        lim = self.figures.limit[key]
        cap = self.session.pools[key[1]].capacity.as_tuple()
        whole = [min(max(des[i], fair[i]), lim[i]) for i in range(3)]
        g, c, m = (whole[i] if math.isfinite(whole[i]) else cap[i] for i in range(3))
        entitled = self._entitled[key] = (g, c, m)
        return entitled

    def queue_order_inputs(self, queue: str, pool: str) -> object:
        """What queue_order_key of `queue` depends on that changes within a session:
        its allocation in `pool`."""
        acc = self._acc.get((queue, pool))
        return None if acc is None else tuple(acc)

    # ------------------------------------------------------------ fairshare and quota
    def over_fairshare(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` exceed its fairshare (on a governed resource) with `extra`?"""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        fair = self._fair.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, UNLIMITED, UNLIMITED))
        for i in (0, 1, 2):
            e = extra[i]
            if e > EPSILON and acc[i] + e > fair[i] + EPSILON and math.isfinite(des[i]):
                return True
        return False

    def over_fairshare_by(self, queue: str, pool: str, extra: Vec) -> float:
        """GPUs `queue` would hold over its fairshare with `extra` (0 when within)."""
        key = (queue, pool)
        if not math.isfinite(self._deserved.get(key, _ZERO)[0]):
            return 0.0
        acc = self._acc.get(key, _ZERO)[0]
        return max(0.0, acc + extra[0] - self._fair.get(key, _ZERO)[0])

    def above_fairshare(self, queue: str, pool: str) -> bool:
        """Does `queue` hold more than its fairshare of a governed resource now?"""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        fair = self._fair.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, UNLIMITED, UNLIMITED))
        return any(math.isfinite(des[i]) and acc[i] > fair[i] + EPSILON for i in range(3))

    def within_deserved(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` stay within its deserved quota with `extra`?"""
        return self._exceeds_deserved(queue, pool, extra) is None

    def beyond_deserved(self, queue: str, level: str, pool: str, extra: Vec) -> str | None:
        """If `queue` would exceed its deserved quota with `extra`, that fact with the
        figures of the first resource it would exceed, else None."""
        i = self._exceeds_deserved(queue, pool, extra)
        if i is None:
            return None
        key = (queue, pool)
        held = self._acc.get(key, _ZERO)[i]
        des = self._deserved.get(key, (0.0, UNLIMITED, UNLIMITED))[i]
        return (
            f"{level} {queue} holds {format_amount(held)} {RESOURCE_WORDS[i]} of its deserved "
            f"{format_amount(des)} in pool {pool} and this needs {format_amount(extra[i])}"
        )

    def _exceeds_deserved(self, queue: str, pool: str, extra: Vec) -> int | None:
        """The first resource on which `queue` would exceed its deserved quota with
        `extra`, or None."""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, UNLIMITED, UNLIMITED))
        for i in (0, 1, 2):
            e = extra[i]
            if e > EPSILON and acc[i] + e > des[i] + EPSILON:
                return i
        return None

    def spare_gpus(self, queue: str, pool: str) -> float:
        """GPUs `queue` holds in `pool` above its deserved quota."""
        key = (queue, pool)
        acc = self._acc[key][0]
        return max(0.0, acc - min(self._deserved[key][0], acc))

    # ------------------------------------------------------------ reclaim
    def may_give_back(
        self, queue: str, pool: str, freed: tuple[float, float, float], deserved_mode: bool
    ) -> bool:
        """May `queue` give `freed` back to a reclaimer? Judged on what it holds before
        `freed` is taken: it must be over its fairshare (or, in deserved mode, over its
        deserved quota) on a resource it gives. A workload that straddles the deserved
        line counts as over quota and is taken whole, even if the queue then drops
        below its deserved quota; one wholly within the deserved quota is protected."""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        fair = self._fair.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, math.inf, math.inf))
        for i in range(3):
            if freed[i] <= EPSILON or not math.isfinite(des[i]):
                continue
            if acc[i] > fair[i] + EPSILON or (deserved_mode and acc[i] > des[i] + EPSILON):
                return True
        return False

    def straddle_reason(
        self, queue: str, level: str, pool: str, freed: tuple[float, float, float]
    ) -> str | None:
        """If taking `freed` takes `queue` from above its deserved quota to below it (a
        workload that straddles the deserved line), that fact with its figures."""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, math.inf, math.inf))
        for i in range(3):
            over = acc[i] > des[i] + EPSILON
            if over and freed[i] > EPSILON and acc[i] - freed[i] < des[i] - EPSILON:
                return straddled_quota(level, queue, pool, i, acc[i], des[i], freed[i])
        return None

    def could_give_back(self, queue: str, pool: str, deserved_mode: bool) -> bool:
        """Could `queue` give anything back at all (see may_give_back)? False stays
        False while allocations only go down."""
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        fair = self._fair.get(key, _ZERO)
        des = self._deserved.get(key, (0.0, math.inf, math.inf))
        for i in range(3):
            if not math.isfinite(des[i]):
                continue
            if acc[i] > fair[i] + EPSILON or (deserved_mode and acc[i] > des[i] + EPSILON):
                return True
        return False

    # ------------------------------------------------------------ admission
    def admission_problem(self, w: WorkloadState, pool: str, extra: Vec) -> tuple[str, str] | None:
        """Why `w` may not take `extra` more in quota pool `pool` (limits, and the
        in-quota rule of non-preemptible work), or None when it may."""
        figures = self.figures
        limited = figures.limited
        if (
            w.preemptible
            and (w.project, pool) not in limited
            and ((w.department, pool) not in limited)
        ):
            return None  # nothing to check: no finite limit, no in-quota rule
        for name, level in ((w.project, "project"), (w.department, "department")):
            key = (name, pool)
            lim = figures.limit.get(key)
            if lim is None:
                continue
            acc = self._acc.get(key, _ZERO)
            for i in range(3):
                if extra[i] > EPSILON and acc[i] + extra[i] > lim[i] + EPSILON:
                    return (
                        LIMIT,
                        f"{level} {name} is limited to {format_amount(lim[i])} "
                        f"{RESOURCE_WORDS[i]} in pool {pool}; it uses {format_amount(acc[i])} "
                        f"and this needs {format_amount(extra[i])}",
                    )
        if not w.preemptible:
            what = (
                "interactive workloads"
                if w.spec.kind == KIND_INTERACTIVE
                else "non-preemptible workloads"
            )
            for name, level in ((w.project, "project"), (w.department, "department")):
                key = (name, pool)
                des = self._deserved.get(key)
                if des is None:
                    continue
                acc = self._acc_np.get(key, _ZERO)
                for i in range(3):
                    if extra[i] > EPSILON and acc[i] + extra[i] > des[i] + EPSILON:
                        if acc[i] + EPSILON >= des[i]:
                            head = (
                                f"{level} {name} is at its quota of {format_amount(des[i])} "
                                f"{RESOURCE_WORDS[i]} in pool {pool}"
                            )
                        else:
                            head = (
                                f"{level} {name} has {format_amount(des[i] - acc[i])} of its "
                                f"{format_amount(des[i])} quota {RESOURCE_WORDS[i]} left in "
                                f"pool {pool} and this needs {format_amount(extra[i])}"
                            )
                        return (
                            "quota",
                            f"{head}; {what} cannot use over-quota {RESOURCE_WORDS[i]}",
                        )
        return None

    # ------------------------------------------------------------ reasons and figures
    def fairshare_blocked(self, queue: str, level: str, pool: str, extra: Vec) -> str:
        """Why a queue over its fairshare waits: figures of the resource that is over."""
        index = self.session.pools[pool]
        cache_key = ("fairshare", queue, level, extra[0], extra[1], extra[2])
        text = index.cached_reason(cache_key)
        if text is None:
            text = index.keep_reason(cache_key, self._fairshare_blocked(queue, level, pool, extra))
        return text

    def _fairshare_blocked(self, queue: str, level: str, pool: str, extra: Vec) -> str:
        key = (queue, pool)
        acc = self._acc.get(key, _ZERO)
        fair = self._fair.get(key, _ZERO)
        free = self.session.pools[pool].free_gpus
        weight = self.figures.weight.get(key, _ZERO)
        for i in range(3):
            if extra[i] > EPSILON and acc[i] + extra[i] > fair[i] + EPSILON:
                if weight[i] <= 0:
                    return no_over_quota_share(
                        level, queue, pool, i, fair[i], acc[i], extra[i], free
                    )
                share = fair[i]
                text = "its fair share" if math.isfinite(share) else "its share"
                return (
                    f"{level} {queue} would exceed {text} of {format_amount(share)} "
                    f"{RESOURCE_WORDS[i]} in pool {pool} (holds {format_amount(acc[i])}, this "
                    f"needs {format_amount(extra[i])}), so it can only use idle resources "
                    f"({format_amount(free)} free GPUs) and cannot reclaim"
                )
        return f"{level} {queue} is over its fair share in pool {pool}"

    def queue_statuses(self) -> dict[str, dict[str, QueueStatus]]:
        """Every queue's figures in every pool, as they stand now."""
        session = self.session
        figures = self.figures
        out: dict[str, dict[str, QueueStatus]] = {}
        zero = _ZERO
        for q in session.queues.values():
            per_pool: dict[str, QueueStatus] = {}
            for pool in session.pools:
                key = (q.name, pool)
                per_pool[pool] = QueueStatus(
                    queue=q.name,
                    pool=pool,
                    deserved=_res(self._deserved.get(key, zero)),
                    limit=_res(figures.limit.get(key, zero)),
                    fairshare=_res(self._fair.get(key, zero)),
                    allocated=_res(self._acc.get(key, zero)),
                    requested=_res(figures.requested.get(key, zero)),
                )
            out[q.name] = per_pool
        return out
