"""Every queue's figures in every pool for one session: deserved quota, limit, what its
workloads request and its fairshare, worked out top-down (pool -> departments ->
projects) with the division of division.py, per resource."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from scheduler_core.engine.plugins.proportion.division import (
    ShareClaim,
    decayed_capacity_seconds,
    decayed_usage,
    divide,
)
from scheduler_core.engine.resources import EPSILON, UNLIMITED, Resources
from scheduler_core.engine.snapshot import FAIRSHARE_TIME_BASED, POLICY_QUOTA, QueueSpec

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Key, Session, Vec
    from scheduler_core.engine.framework.state import PoolIndex


def _vec(r: Resources) -> Vec:
    return [r.gpus, r.cpu, r.memory]


class QueueFigures:
    """Per (queue, pool): `deserved` quota, `limit`, `requested` (by its workloads,
    running ones in their pool, pending ones in every candidate pool), `weight` (its
    over-quota weight per resource) and `fair` (fairshare); `limited` holds the keys
    with a finite limit on some resource."""

    __slots__ = ("children", "deserved", "fair", "limit", "limited", "requested", "weight")

    def __init__(self, session: Session) -> None:
        queues = session.snapshot.queues
        departments = [q for q in queues if q.parent is None]
        self.children: dict[str, list[QueueSpec]] = {d.name: [] for d in departments}
        for q in queues:
            if q.parent is not None:
                self.children.setdefault(q.parent, []).append(q)
        self.deserved: dict[Key, Vec] = {}
        self.limit: dict[Key, Vec] = {}
        self.fair: dict[Key, Vec] = {}
        self.weight: dict[Key, Vec] = {}
        self.limited: set[Key] = set()
        self.requested = _requested(session)
        self._divide(session, departments)

    def quota_of(self, q: QueueSpec, pool: str) -> Vec:
        """Deserved quota of queue `q` in `pool` (see QueueSpec for defaults)."""
        if pool in q.quota:
            return _vec(q.quota[pool])
        if q.parent is None:
            total = [0.0, 0.0, 0.0]
            for child in self.children.get(q.name, []):
                cv = self.quota_of(child, pool)
                total = [a + b for a, b in zip(total, cv, strict=True)]
            return total
        return [0.0, UNLIMITED, UNLIMITED]

    @staticmethod
    def limit_of(q: QueueSpec, pool: str) -> Vec:
        """Hard limit of queue `q` in `pool` (unlimited when not set)."""
        if pool in q.limit:
            return _vec(q.limit[pool])
        return [UNLIMITED, UNLIMITED, UNLIMITED]

    def _divide(self, session: Session, departments: list[QueueSpec]) -> None:
        """Deserved, limit and fairshare of every queue and pool."""
        usage: dict[Key, float] = {}
        asked_in = self._asked()
        for pool in session.pools.values():
            self._bounds(session, pool.name)
            cfg = pool.config
            k: float | None = None
            if cfg.fairshare_mode == FAIRSHARE_TIME_BASED and cfg.policy == POLICY_QUOTA:
                k = cfg.time_based_k
                _add_usage(session, pool, usage)
            from_quota = cfg.over_quota_weight_from_quota
            asked = asked_in.get(pool.name, (False, False, False))
            # where nothing asks for a resource, every fairshare of it is 0: each queue
            # gets min(deserved, requested) and nobody asks for more
            idle = [r for r in range(3) if not asked[r]]
            self._nobody_asks(departments, pool.name, idle, from_quota)
            for r in range(3):
                if asked[r]:
                    total = pool.capacity.as_tuple()[r]
                    self._divide_resource(departments, pool.name, r, total, usage, from_quota, k)

    def _bounds(self, session: Session, pool: str) -> None:
        """Deserved quota and limit of every queue in `pool`."""
        for q in session.queues.values():
            key = (q.name, pool)
            self.deserved[key] = self.quota_of(q, pool)
            limit = self.limit[key] = self.limit_of(q, pool)
            if any(math.isfinite(x) for x in limit):
                self.limited.add(key)

    def _divide_resource(
        self,
        departments: list[QueueSpec],
        pool: str,
        r: int,
        total: float,
        usage: dict[Key, float],
        from_quota: bool,
        k: float | None,
    ) -> None:
        """Fairshare of resource `r` of `pool` (`total` of it): to the departments, then
        each department's to its projects."""
        dept_fair = divide(total, self._claims(departments, pool, r, usage, from_quota), k)
        for d in departments:
            self.fair.setdefault((d.name, pool), [0.0, 0.0, 0.0])[r] = dept_fair[d.name]
            kids = self.children.get(d.name, [])
            kid_fair = divide(dept_fair[d.name], self._claims(kids, pool, r, usage, from_quota), k)
            for child in kids:
                self.fair.setdefault((child.name, pool), [0.0, 0.0, 0.0])[r] = kid_fair[child.name]

    def _asked(self) -> dict[str, list[bool]]:
        """Per pool and resource: does any queue's workloads ask for some of it there?"""
        asked: dict[str, list[bool]] = {}
        for (_, pool), vec in self.requested.items():
            flags = asked.setdefault(pool, [False, False, False])
            for r in range(3):
                flags[r] = flags[r] or vec[r] > EPSILON
        return asked

    def _nobody_asks(
        self, departments: list[QueueSpec], pool: str, resources: list[int], from_quota: bool
    ) -> None:
        """Fairshare 0 and the weight of every queue on `resources` of `pool`, where
        nothing asks for them (what the division would give, without dividing)."""
        if not resources:
            return
        fair, weight = self.fair, self.weight
        for d in departments:
            for q in (d, *self.children.get(d.name, ())):
                key = (q.name, pool)
                f = fair.setdefault(key, [0.0, 0.0, 0.0])
                w = weight.setdefault(key, [0.0, 0.0, 0.0])
                for r in resources:
                    f[r] = 0.0
                    w[r] = self._weight(key, q, r, from_quota)

    def _weight(self, key: Key, q: QueueSpec, r: int, from_quota: bool) -> float:
        """The over-quota weight of queue `q` on resource `r` (its deserved quota where
        the pool weighs by quota)."""
        if not from_quota:
            return q.over_quota_weight
        deserved = self.deserved[key][r]
        return deserved if math.isfinite(deserved) else self.deserved[key][0]

    def _claims(
        self,
        queues: list[QueueSpec],
        pool: str,
        r: int,
        usage: dict[Key, float],
        from_quota: bool,
    ) -> list[ShareClaim]:
        """The claims of `queues` on resource `r` of `pool`."""
        claims = []
        for q in queues:
            key = (q.name, pool)
            deserved = self.deserved[key][r]
            weight = self._weight(key, q, r, from_quota)
            self.weight.setdefault(key, [0.0, 0.0, 0.0])[r] = weight
            claims.append(
                ShareClaim(
                    key=q.name,
                    deserved=deserved,
                    requested=self.requested.get(key, [0.0, 0.0, 0.0])[r],
                    limit=self.limit[key][r],
                    rank=q.rank,
                    weight=weight,
                    order=q.creation_order,
                    usage=usage.get(key, 0.0),
                )
            )
        return claims


def _add_usage(session: Session, pool: PoolIndex, usage: dict[Key, float]) -> None:
    """Add each queue's decayed usage of `pool`, as a share of its decayed capacity, to
    `usage` (a project's counts for its department too): time-based fairshare."""
    cfg = pool.config
    raw = decayed_usage(
        (u for u in session.snapshot.usage if u.pool == pool.name),
        session.now,
        cfg.time_based_window,
        cfg.time_based_half_life,
    )
    denom = decayed_capacity_seconds(
        pool.capacity.gpus, cfg.time_based_window, cfg.time_based_half_life
    )
    for (qname, pname), value in raw.items():
        used_by = session.queues.get(qname)
        if used_by is None or denom <= EPSILON:
            continue
        share = value / denom
        usage[(qname, pname)] = usage.get((qname, pname), 0.0) + share
        if used_by.parent is not None:
            pk = (used_by.parent, pname)
            usage[pk] = usage.get(pk, 0.0) + share


def _requested(session: Session) -> dict[Key, Vec]:
    """What the workloads of each (queue, pool) request: running ones in their pool,
    pending ones in each of their candidate pools; projects and departments alike."""
    requested: dict[Key, Vec] = {}
    # the vectors a workload adds to, shared by workloads of the same queues/pools
    targets: dict[tuple[object, ...], list[Vec]] = {}
    all_pools = session.pool_names
    for w in session.workloads.values():
        # w.spec.max_request(), without building Resources
        g = c = m = 0.0
        for grp in w.groups:
            n = grp.pods
            g = g + grp.gpus * n
            c = c + grp.cpu * n
            m = m + grp.memory * n
        if w.pods:
            assert w.pool is not None
            where: object = w.pool
            pools = [w.pool]
        else:
            pools = session.candidate_pools(w)
            where = None if pools is all_pools else tuple(pools)
        tk = (w.project, w.department, bool(w.pods), where)
        vectors = targets.get(tk)
        if vectors is None:
            vectors = targets[tk] = [
                requested.setdefault(key, [0.0, 0.0, 0.0])
                for p in pools
                for key in ((w.project, p), (w.department, p))
            ]
        for cur in vectors:
            cur[0] += g
            cur[1] += c
            cur[2] += m
    return requested
