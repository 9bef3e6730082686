"""A session: one cycle's working state over a frozen snapshot.

It builds the node/pool index and workload state, keeps per-queue accounting up to date
as statements bind and unbind pods, works out the fairshare figures, answers the
questions actions ask (may this queue take this much? which queue goes next?) and turns
the final state into a CycleResult.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, TypeVar, cast

from scheduler_core.engine.decisions import (
    EVICT_FAULT,
    Allocate,
    CycleResult,
    Decision,
    Evict,
    Expand,
    Fail,
    Move,
    PendingInfo,
    QueueStatus,
    Shrink,
)
from scheduler_core.engine.fairshare import (
    ShareClaim,
    decayed_capacity_seconds,
    decayed_usage,
    divide,
)
from scheduler_core.engine.plugins import Plugin, answering, build_plugins
from scheduler_core.engine.resources import EPSILON, UNLIMITED, Resources, format_amount
from scheduler_core.engine.snapshot import (
    FAIRSHARE_TIME_BASED,
    KIND_INTERACTIVE,
    POLICY_QUOTA,
    ClusterSnapshot,
    PodPlacement,
    QueueSpec,
)
from scheduler_core.engine.state import NodeState, PoolIndex, WorkloadState
from scheduler_core.engine.statement import Statement

Vec = list[float]

T = TypeVar("T")


class ReclaimEntry:
    """A queue that may give something back in a pool, as of the last look: its
    department, the GPUs it holds above its deserved quota (`spare`), whether it is
    over its fairshare, whether it could give anything at all when victims may be
    taken down to deserved quota (`gives_to_deserved`), and its preemptible running
    workloads in victim order (`victims`, the elastic ones also in `elastic`).
    `seq` orders entries by when they were (re)indexed."""

    __slots__ = (
        "department",
        "elastic",
        "gives_to_deserved",
        "keyed",
        "over_fair",
        "queue",
        "seq",
        "spare",
        "victims",
    )

    def __init__(
        self,
        queue: str,
        department: str,
        spare: float,
        over_fair: bool,
        gives_to_deserved: bool,
        victims: list[WorkloadState],
    ) -> None:
        self.queue = queue
        self.department = department
        self.spare = spare
        self.over_fair = over_fair
        self.gives_to_deserved = gives_to_deserved
        self.victims = victims
        self.elastic = [v for v in victims if v.elastic]
        self.seq = 0
        # victims with their merge keys (see actions/reclaim.py), made when needed
        self.keyed: list[tuple[int, tuple[float, ...], int, WorkloadState]] | None = None


def entry_seq(entry: ReclaimEntry) -> int:
    """Sort key: index order."""
    return entry.seq


class ReclaimIndex:
    """Per pool: the queues that may give something back, kept up to date lazily from
    the queues touched since the last look, grouped by department, with the GPUs they
    could give (above their deserved quota) summed overall and per department, and
    whether each department could give anything (cached until one of its queues is
    touched)."""

    __slots__ = ("by_department", "department_gives", "entries", "seq", "spare_des", "spare_fair")

    def __init__(self) -> None:
        # queue -> entry, in the order the queues were last (re)indexed
        self.entries: dict[str, ReclaimEntry] = {}
        # department -> its queues' entries, in the same order
        self.by_department: dict[str, dict[str, ReclaimEntry]] = {}
        # (department, victims may go down to deserved quota) -> could it give anything
        self.department_gives: dict[tuple[str, bool], bool] = {}
        self.seq = 0
        # totals of spare GPUs: [overall, per department], for queues over fairshare
        # and for queues only over deserved quota
        self.spare_fair: dict[str, float] = {}
        self.spare_des: dict[str, float] = {}

    def touched(self, department: str) -> None:
        """A queue of `department` changed: forget what was cached about it."""
        self.department_gives.pop((department, False), None)
        self.department_gives.pop((department, True), None)

    def remove(self, queue: str) -> None:
        """Forget `queue` (and take its spare out of the totals)."""
        old = self.entries.pop(queue, None)
        if old is None:
            return
        del self.by_department[old.department][queue]
        totals = self.spare_fair if old.over_fair else self.spare_des
        totals[""] -= old.spare
        totals[old.department] -= old.spare

    def add(self, entry: ReclaimEntry) -> None:
        """Record `entry.queue` as able to give back `entry.spare` GPUs."""
        self.seq += 1
        entry.seq = self.seq
        self.entries[entry.queue] = entry
        self.by_department.setdefault(entry.department, {})[entry.queue] = entry
        totals = self.spare_fair if entry.over_fair else self.spare_des
        totals[""] = totals.get("", 0.0) + entry.spare
        totals[entry.department] = totals.get(entry.department, 0.0) + entry.spare


Key = tuple[str, str]  # (queue, pool)


class QueueContext:
    """What binding a pod of one workload in one pool touches: its (project, pool)
    key, the pool, the allocation vectors of its project and department (and their
    non-preemptible parts for non-preemptible work), and the running-workload maps.
    Cached per workload and pool so that binding does not look these up each time."""

    __slots__ = (
        "all_acc",
        "dept_acc",
        "dept_np",
        "key",
        "pool",
        "project_acc",
        "project_np",
        "running_pool",
        "running_queue",
    )

    def __init__(
        self,
        key: Key,
        pool: PoolIndex,
        project_acc: Vec,
        dept_acc: Vec,
        project_np: Vec | None,
        dept_np: Vec | None,
        running_queue: dict[str, WorkloadState],
        running_pool: dict[str, WorkloadState],
    ) -> None:
        self.key = key
        self.pool = pool
        self.project_acc = project_acc
        self.dept_acc = dept_acc
        self.project_np = project_np
        self.dept_np = dept_np
        self.all_acc: tuple[Vec, ...] = (project_acc, dept_acc)
        if project_np is not None and dept_np is not None:
            self.all_acc = (project_acc, dept_acc, project_np, dept_np)
        self.running_queue = running_queue
        self.running_pool = running_pool


RES_LABEL = ("GPUs", "CPU cores", "GiB of memory")


def _partial(used: float) -> int:
    """1 when a device holds fractions and still has room, else 0."""
    return 1 if EPSILON < used < 1.0 - EPSILON else 0


_order_key = attrgetter("order_key")


def _vec(r: Resources) -> Vec:
    return [r.gpus, r.cpu, r.memory]


def _res(v: Iterable[float]) -> Resources:
    g, c, m = v
    return Resources(g, c, m)


class Session:
    """Working state of one cycle (see module doc)."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.now = snapshot.now
        self.plugins: list[Plugin] = build_plugins(snapshot.plugins)
        # per hook, only the plugins that can answer it (see plugins.answering)
        self.job_order_plugins = answering(self.plugins, "job_order_key")
        self.victim_order_plugins = answering(self.plugins, "victim_order_key")
        self.gang_plugins = answering(self.plugins, "gang_counts")
        self.protection_plugins = answering(self.plugins, "protected_until")
        self.commits = 0
        self.nodes: dict[str, NodeState] = {}
        by_pool: dict[str, list[NodeState]] = {p.name: [] for p in snapshot.pools}
        for i, spec in enumerate(snapshot.nodes):
            node = NodeState(spec, i)
            self.nodes[spec.name] = node
            by_pool.setdefault(spec.pool, []).append(node)
        self.pools: dict[str, PoolIndex] = {
            p.name: PoolIndex(p, by_pool[p.name]) for p in snapshot.pools
        }
        self.queues: dict[str, QueueSpec] = {q.name: q for q in snapshot.queues}
        self.departments = [q for q in snapshot.queues if q.parent is None]
        self.children: dict[str, list[QueueSpec]] = {d.name: [] for d in self.departments}
        for q in snapshot.queues:
            if q.parent is not None:
                self.children.setdefault(q.parent, []).append(q)
        self.acc: dict[Key, Vec] = {}
        self.acc_np: dict[Key, Vec] = {}
        self.running_by_pool: dict[str, dict[str, WorkloadState]] = {p: {} for p in self.pools}
        self.running_by_queue: dict[Key, dict[str, WorkloadState]] = {}
        self.victim_keys: dict[str, tuple[float, ...]] = {}
        self.job_keys: dict[str, tuple[float, ...]] = {}
        # preemptible running workloads per (queue, pool), in victim order; dropped
        # whenever that queue binds or unbinds a pod
        self.queue_victims: dict[Key, list[WorkloadState]] = {}
        self.gang_cache: dict[int, dict[str, int]] = {}
        # queues touched since the reclaim index last looked (see actions/reclaim.py)
        self.dirty_queues: dict[Key, str] = {}  # (project, pool) -> its department
        self.reclaim_index: dict[str, ReclaimIndex] = {}
        self.gang_request_cache: dict[int, Vec] = {}
        self._candidates: dict[str, list[str]] = {}
        self._all_pools = list(self.pools)
        self._protection: dict[str, float | None] = {}
        self.workloads: dict[str, WorkloadState] = {}
        self.reasons: dict[str, dict[str, tuple[str, str]]] = {}
        # (action, pool, WorkloadState.kind_key) -> (commits, verdict): see alike()
        self._alike: dict[tuple[object, ...], tuple[int, Any]] = {}
        queues = self.queues
        workloads = self.workloads
        kinds: dict[tuple[object, ...], int] = {}
        for wspec in snapshot.workloads:
            project = queues.get(wspec.project)
            dept = project.parent if project is not None and project.parent else wspec.project
            w = WorkloadState(wspec, dept, kinds)
            workloads[w.id] = w
            if not w.pods:
                continue
            pods = w.pods
            w.pods = []
            if w.pool is None:
                w.pool = self.nodes[pods[0].node].pool
            for pod in pods:
                self.bind_pod(w, self._with_devices(w, pod), len(w.pods))
            w.initial_pods = tuple(w.pods)
        self.deserved: dict[Key, Vec] = {}
        self.limit: dict[Key, Vec] = {}
        self.fair: dict[Key, Vec] = {}
        # (queue, pool) with a finite limit on some resource
        self.limited: set[Key] = set()
        self.requested: dict[Key, Vec] = {}
        self.compute_fairshare()

    # ----------------------------------------------------------------- pools
    def policy_of(self, pool: str) -> str:
        """The scheduling policy of `pool`."""
        return self.pools[pool].config.policy

    def placement_of(self, pool: str) -> str:
        """binpack or spread."""
        return self.pools[pool].config.placement

    def candidate_pools(self, w: WorkloadState) -> list[str]:
        """The pools `w` may run in, in preference order."""
        found = self._candidates.get(w.id)
        if found is None:
            if w.spec.pools:
                found = [p for p in w.spec.pools if p in self.pools]
            else:
                found = self._all_pools  # shared: callers only read it
            self._candidates[w.id] = found
        return found

    # ------------------------------------------------------------ binding
    def _with_devices(self, w: WorkloadState, pod: PodPlacement) -> PodPlacement:
        """A running pod from the snapshot, with devices chosen if it gave none."""
        grp = w.group(pod.group)
        if pod.devices or grp.gpus <= EPSILON:
            return pod
        node = self.nodes[pod.node]
        if grp.gpus < 1.0 - EPSILON:
            shared = [
                i
                for i, u in enumerate(node.dev_used)
                if u > EPSILON and u + grp.gpus <= 1 + EPSILON
            ]
            free = [i for i, u in enumerate(node.dev_used) if u <= EPSILON]
            pick = shared[:1] or free[:1] or [min(range(node.gpus), key=lambda i: node.dev_used[i])]
            return PodPlacement(pod.group, pod.node, (pick[0],), grp.gpus)
        k = round(grp.gpus)
        order = sorted(range(node.gpus), key=lambda i: (node.dev_used[i] > EPSILON, i))
        return PodPlacement(pod.group, pod.node, tuple(sorted(order[:k])), 1.0)

    def _queue_context(self, w: WorkloadState, pool: str) -> QueueContext:
        """What binding a pod of `w` in `pool` updates (created on first use)."""
        ctx = w.contexts.get(pool)
        if ctx is None:
            key = (w.project, pool)
            dkey = (w.department, pool)
            acc = self.acc
            project_acc = acc.get(key)
            if project_acc is None:
                project_acc = acc[key] = [0.0, 0.0, 0.0]
            dept_acc = acc.get(dkey)
            if dept_acc is None:
                dept_acc = acc[dkey] = [0.0, 0.0, 0.0]
            project_np: Vec | None = None
            dept_np: Vec | None = None
            if not w.preemptible:
                project_np = self.acc_np.get(key)
                if project_np is None:
                    project_np = self.acc_np[key] = [0.0, 0.0, 0.0]
                dept_np = self.acc_np.get(dkey)
                if dept_np is None:
                    dept_np = self.acc_np[dkey] = [0.0, 0.0, 0.0]
            running = self.running_by_queue.get(key)
            if running is None:
                running = self.running_by_queue[key] = {}
            ctx = QueueContext(
                key,
                self.pools[pool],
                project_acc,
                dept_acc,
                project_np,
                dept_np,
                running,
                self.running_by_pool[pool],
            )
            w.contexts[pool] = ctx
        return ctx

    def bind_pod(self, w: WorkloadState, pod: PodPlacement, index: int) -> None:
        """Account one pod of `w` on its node (used by statements)."""
        node = self.nodes[pod.node]
        grp = w.group_map[pod.group]
        ctx = self._queue_context(w, node.pool)
        g = grp.gpus
        c = grp.cpu
        m = grp.memory
        ready = node.ready
        old_whole = node.free_whole
        old_partial = node.partial_count > 0
        fraction = pod.gpu_fraction
        dev_used = node.dev_used
        for d in pod.devices:
            before = dev_used[d]
            after = before + fraction
            dev_used[d] = after
            if before <= EPSILON:
                node.free_whole -= 1
            node.partial_count += _partial(after) - _partial(before)
        node.used_cpu += c
        node.used_mem += m
        pool = ctx.pool
        pool.version += 1
        if ready:
            pool.free_gpus -= g
            if old_whole != node.free_whole or old_partial != (node.partial_count > 0):
                pool.reindex(node, old_whole, old_partial)
        wid = w.id
        here = node.workloads
        here[wid] = here.get(wid, 0) + 1
        key = ctx.key
        self.queue_victims.pop(key, None)
        self.dirty_queues[key] = w.department
        w.pods.insert(index, pod)
        w.counts[pod.group] += 1
        for acc in (ctx.project_acc, ctx.dept_acc) if ctx.project_np is None else ctx.all_acc:
            acc[0] += g
            acc[1] += c
            acc[2] += m
        ctx.running_pool[wid] = w
        ctx.running_queue[wid] = w

    def unbind_pod(self, w: WorkloadState, pod: PodPlacement, index: int | None = None) -> None:
        """Remove one pod of `w` from its node (used by statements); `index` is where
        it sits in `w.pods` when the caller knows."""
        node = self.nodes[pod.node]
        grp = w.group_map[pod.group]
        ctx = self._queue_context(w, node.pool)
        g = grp.gpus
        c = grp.cpu
        m = grp.memory
        old_whole = node.free_whole
        old_partial = node.partial_count > 0
        fraction = pod.gpu_fraction
        dev_used = node.dev_used
        for d in pod.devices:
            before = dev_used[d]
            after = before - fraction
            if after <= EPSILON:
                after = 0.0
                node.free_whole += 1
            dev_used[d] = after
            node.partial_count += _partial(after) - _partial(before)
        node.used_cpu -= c
        node.used_mem -= m
        pool = ctx.pool
        pool.version += 1
        if node.ready:
            pool.free_gpus += g
            if old_whole != node.free_whole or old_partial != (node.partial_count > 0):
                pool.reindex(node, old_whole, old_partial)
        wid = w.id
        here = node.workloads
        left = here[wid] - 1
        if left:
            here[wid] = left
        else:
            del here[wid]
        pods = w.pods
        if index is None:
            pods.remove(pod)
        else:
            del pods[index]
        key = ctx.key
        self.queue_victims.pop(key, None)
        self.dirty_queues[key] = w.department
        w.counts[pod.group] -= 1
        for acc in (ctx.project_acc, ctx.dept_acc) if ctx.project_np is None else ctx.all_acc:
            acc[0] -= g
            acc[1] -= c
            acc[2] -= m
        if not pods:
            ctx.running_pool.pop(wid, None)
            ctx.running_queue.pop(wid, None)

    def close(self) -> None:
        """Drop the per-workload binding shortcuts, which point back at the session's
        running-workload maps: without them the session's objects form no reference
        cycles and are freed as soon as the cycle's result is returned."""
        for w in self.workloads.values():
            w.contexts.clear()

    def statement(self) -> Statement:
        """A new statement over this session."""
        return Statement(self)

    def on_commit(self) -> None:
        """Called by a statement that commits (invalidates caches of failures)."""
        self.commits += 1

    # ------------------------------------------------------------ fairshare
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

    def limit_of(self, q: QueueSpec, pool: str) -> Vec:
        """Hard limit of queue `q` in `pool` (unlimited when not set)."""
        if pool in q.limit:
            return _vec(q.limit[pool])
        return [UNLIMITED, UNLIMITED, UNLIMITED]

    def compute_fairshare(self) -> None:
        """Work out deserved, limit, requested and fairshare of every queue and pool."""
        requested: dict[Key, Vec] = {}
        # the vectors a workload adds to, shared by workloads of the same queues/pools
        targets: dict[tuple[object, ...], list[Vec]] = {}
        all_pools = self._all_pools
        for w in self.workloads.values():
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
                pools = self.candidate_pools(w)
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
        self.requested = requested
        usage: dict[Key, float] = {}
        for pool in self.pools.values():
            cfg = pool.config
            for q in self.queues.values():
                key = (q.name, pool.name)
                self.deserved[key] = self.quota_of(q, pool.name)
                self.limit[key] = self.limit_of(q, pool.name)
                if any(math.isfinite(x) for x in self.limit[key]):
                    self.limited.add(key)
            k: float | None = None
            if cfg.fairshare_mode == FAIRSHARE_TIME_BASED and cfg.policy == POLICY_QUOTA:
                k = cfg.time_based_k
                raw = decayed_usage(
                    (u for u in self.snapshot.usage if u.pool == pool.name),
                    self.now,
                    cfg.time_based_window,
                    cfg.time_based_half_life,
                )
                denom = decayed_capacity_seconds(
                    pool.capacity.gpus, cfg.time_based_window, cfg.time_based_half_life
                )
                for (qname, pname), value in raw.items():
                    used_by = self.queues.get(qname)
                    if used_by is None or denom <= EPSILON:
                        continue
                    share = value / denom
                    usage[(qname, pname)] = usage.get((qname, pname), 0.0) + share
                    if used_by.parent is not None:
                        pk = (used_by.parent, pname)
                        usage[pk] = usage.get(pk, 0.0) + share
            for r in range(3):
                total = pool.capacity.as_tuple()[r]
                tops = self._claims(self.departments, pool.name, r, usage)
                dept_fair = divide(total, tops, k)
                for d in self.departments:
                    self.fair.setdefault((d.name, pool.name), [0.0, 0.0, 0.0])[r] = dept_fair[
                        d.name
                    ]
                    kids = self.children.get(d.name, [])
                    kid_fair = divide(dept_fair[d.name], self._claims(kids, pool.name, r, usage), k)
                    for child in kids:
                        self.fair.setdefault((child.name, pool.name), [0.0, 0.0, 0.0])[r] = (
                            kid_fair[child.name]
                        )

    def _claims(
        self, queues: list[QueueSpec], pool: str, r: int, usage: dict[Key, float]
    ) -> list[ShareClaim]:
        from_quota = self.pools[pool].config.over_quota_weight_from_quota
        claims = []
        for q in queues:
            key = (q.name, pool)
            deserved = self.deserved[key][r]
            if from_quota:
                weight = deserved if math.isfinite(deserved) else self.deserved[key][0]
            else:
                weight = q.over_quota_weight
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

    # ------------------------------------------------------------ queue questions
    def allocated(self, queue: str, pool: str) -> Vec:
        """What `queue` holds in `pool` now."""
        return self.acc.get((queue, pool), [0.0, 0.0, 0.0])

    def over_fairshare(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` exceed its fairshare (on a governed resource) with `extra`?"""
        key = (queue, pool)
        acc = self.acc.get(key, [0.0, 0.0, 0.0])
        fair = self.fair.get(key, [0.0, 0.0, 0.0])
        des = self.deserved.get(key, [0.0, UNLIMITED, UNLIMITED])
        for i in (0, 1, 2):
            e = extra[i]
            if e > EPSILON and acc[i] + e > fair[i] + EPSILON and math.isfinite(des[i]):
                return True
        return False

    def above_fairshare(self, queue: str, pool: str) -> bool:
        """Does `queue` hold more than its fairshare of a governed resource now?"""
        key = (queue, pool)
        acc = self.acc.get(key, [0.0, 0.0, 0.0])
        fair = self.fair.get(key, [0.0, 0.0, 0.0])
        des = self.deserved.get(key, [0.0, UNLIMITED, UNLIMITED])
        return any(math.isfinite(des[i]) and acc[i] > fair[i] + EPSILON for i in range(3))

    def within_deserved(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` stay within its deserved quota with `extra`?"""
        key = (queue, pool)
        acc = self.acc.get(key, [0.0, 0.0, 0.0])
        des = self.deserved.get(key, [0.0, UNLIMITED, UNLIMITED])
        for i in (0, 1, 2):
            e = extra[i]
            if e > EPSILON and acc[i] + e > des[i] + EPSILON:
                return False
        return True

    def starved_share(self, queue: str, pool: str) -> float:
        """Dominant share of the pool's capacity `queue` holds (smaller = more starved)."""
        acc = self.acc.get((queue, pool))
        if acc is None:
            return 0.0
        cap = self.pools[pool].capacity.as_tuple()
        return max(
            (acc[i] / cap[i] for i in range(3) if math.isfinite(cap[i]) and cap[i] > EPSILON),
            default=0.0,
        )

    def queue_key(self, w: WorkloadState, pool: str, extra: Vec) -> tuple[object, ...]:
        """Order of queues (smaller first): not over fairshare, in quota, rank, most
        starved, older; departments first, then their projects."""
        cap = self.pools[pool].capacity
        caps = (cap.gpus, cap.cpu, cap.memory)
        zero = (0.0, 0.0, 0.0)
        keys: list[object] = []
        orders: list[int] = []
        for name in (w.department, w.project):
            key = (name, pool)
            acc = self.acc.get(key, zero)
            fair = self.fair.get(key, zero)
            des = self.deserved.get(key, zero)
            over = False
            outside = False
            starved = 0.0
            for i in range(3):
                a = acc[i]
                c = caps[i]
                if c > EPSILON and c != UNLIMITED:
                    share = a / c
                    if share > starved:
                        starved = share
                e = extra[i]
                if e > EPSILON and des[i] != UNLIMITED:
                    if a + e > fair[i] + EPSILON:
                        over = True
                    if a + e > des[i] + EPSILON:
                        outside = True
            q = self.queues.get(name)
            keys.extend((over, outside, -(q.rank if q else 0), round(starved, 9)))
            orders.append(q.creation_order if q else 0)
        keys.extend((w.spec.submitted_at, w.spec.creation_order, *orders))
        return tuple(keys)

    def admission_problem(self, w: WorkloadState, pool: str, extra: Vec) -> tuple[str, str] | None:
        """Why `w` may not take `extra` more in quota pool `pool` (limits, and the
        in-quota rule of non-preemptible work), or None when it may."""
        limited = self.limited
        if (
            w.preemptible
            and (w.project, pool) not in limited
            and ((w.department, pool) not in limited)
        ):
            return None  # nothing to check: no finite limit, no in-quota rule
        for name, level in ((w.project, "project"), (w.department, "department")):
            key = (name, pool)
            lim = self.limit.get(key)
            if lim is None:
                continue
            acc = self.acc.get(key, [0.0, 0.0, 0.0])
            for i in range(3):
                if extra[i] > EPSILON and acc[i] + extra[i] > lim[i] + EPSILON:
                    return (
                        "limit",
                        f"{level} {name} is limited to {format_amount(lim[i])} {RES_LABEL[i]} "
                        f"in pool {pool}; it uses {format_amount(acc[i])} and this needs "
                        f"{format_amount(extra[i])}",
                    )
        if not w.preemptible:
            what = (
                "interactive workloads"
                if w.spec.kind == KIND_INTERACTIVE
                else "non-preemptible workloads"
            )
            for name, level in ((w.project, "project"), (w.department, "department")):
                key = (name, pool)
                des = self.deserved.get(key)
                if des is None:
                    continue
                acc = self.acc_np.get(key, [0.0, 0.0, 0.0])
                for i in range(3):
                    if extra[i] > EPSILON and acc[i] + extra[i] > des[i] + EPSILON:
                        if acc[i] + EPSILON >= des[i]:
                            head = (
                                f"{level} {name} is at its quota of {format_amount(des[i])} "
                                f"{RES_LABEL[i]} in pool {pool}"
                            )
                        else:
                            head = (
                                f"{level} {name} has {format_amount(des[i] - acc[i])} of its "
                                f"{format_amount(des[i])} quota {RES_LABEL[i]} left in pool "
                                f"{pool} and this needs {format_amount(extra[i])}"
                            )
                        return ("quota", f"{head}; {what} cannot use over-quota {RES_LABEL[i]}")
        return None

    # ------------------------------------------------------------ victims
    def protection(self, w: WorkloadState) -> float | None:
        """Until when `w` may not be evicted whole (min guaranteed runtime), or None."""
        if w.id in self._protection:
            return self._protection[w.id]
        found: float | None = None
        for plugin in self.protection_plugins:
            until = plugin.protected_until(self, w)
            if until is not None:
                found = until
                break
        self._protection[w.id] = found
        return found

    # ------------------------------------------------------------ reasons
    def alike(self, key: tuple[object, ...], compute: Callable[[], T]) -> T:
        """`compute()` for a verdict about a waiting workload that only depends on its
        kind key (in `key`) and on the state: computed again once something commits,
        shared by alike workloads until then (a long queue holds thousands of them)."""
        found = self._alike.get(key)
        if found is not None and found[0] == self.commits:
            return cast(T, found[1])
        value = compute()
        self._alike[key] = (self.commits, value)
        return value

    def set_reason(self, w: WorkloadState, pool: str, kind: str, message: str) -> None:
        """Record why `w` could not start in `pool` (the last word wins)."""
        self.reasons.setdefault(w.id, {})[pool] = (kind, message)

    def add_reason(self, w: WorkloadState, pool: str, kind: str, message: str) -> None:
        """Add to why `w` could not start in `pool`: a capacity reason is kept in front
        of the new one (both facts matter), anything else is replaced."""
        current = self.reasons.get(w.id, {}).get(pool)
        if current is not None and current[0] == "capacity" and current[1] not in message:
            message = f"{current[1]}; {message}"
        self.set_reason(w, pool, kind, message)

    def pending_workloads(self) -> list[WorkloadState]:
        """Workloads without pods (that have not failed), in snapshot order."""
        return [w for w in self.workloads.values() if not w.pods and not w.failed]

    # ------------------------------------------------------------ result
    def result(self) -> CycleResult:
        """The decisions that turn the snapshot into the current state, plus the
        pending reasons and queue figures."""
        freeing: list[Decision] = []
        taking: list[Decision] = []
        for w in self.workloads.values():
            initial = w.initial_pods
            final = tuple(w.pods)
            if w.failed:
                if initial:
                    freeing.append(Evict(w.id, w.evict_kind or EVICT_FAULT, w.evict_reason, None))
                freeing.append(Fail(w.id, w.fail_reason))
                continue
            if initial and (w.evicted or not final):
                freeing.append(Evict(w.id, w.evict_kind, w.evict_reason, w.evict_by))
                if final:
                    assert w.pool is not None
                    taking.append(Allocate(w.id, w.pool, final))
                continue
            if not initial:
                if final:
                    assert w.pool is not None
                    taking.append(Allocate(w.id, w.pool, final))
                continue
            if initial == final:
                continue
            if w.moved:
                assert w.pool is not None
                freeing.append(Move(w.id, w.pool, final, "consolidation"))
                continue
            removed = list(initial)
            added: list[PodPlacement] = []
            for pod in final:
                if pod in removed:
                    removed.remove(pod)
                else:
                    added.append(pod)
            if removed:
                freeing.append(Shrink(w.id, tuple(removed), w.evict_reason))
            if added:
                taking.append(Expand(w.id, tuple(added)))
        decisions = tuple(freeing + taking)
        return CycleResult(
            now=self.now,
            decisions=decisions,
            pending=self._pending_infos(),
            queues=self._queue_statuses(),
            idle_gpus=sum(n.free_whole for n in self.nodes.values() if n.ready),
        )

    def _pending_infos(self) -> dict[str, PendingInfo]:
        pending = self.pending_workloads()
        by_project: dict[str, list[WorkloadState]] = {}
        for w in pending:
            by_project.setdefault(w.project, []).append(w)
        infos: dict[str, PendingInfo] = {}
        reasons = self.reasons
        for project, items in by_project.items():
            items.sort(key=_order_key)
            for pos, w in enumerate(items, start=1):
                per_pool = reasons.get(w.id)
                if not per_pool:
                    kind, text = "capacity", "waiting for the next scheduling cycle"
                elif len(per_pool) == 1:
                    ((kind, text),) = per_pool.values()
                else:
                    kind = next(iter(per_pool.values()))[0]
                    text = "; ".join(f"pool {p}: {m}" for p, (_, m) in per_pool.items())
                infos[w.id] = PendingInfo(w.id, project, kind, text, pos)
        return infos

    def _queue_statuses(self) -> dict[str, dict[str, QueueStatus]]:
        out: dict[str, dict[str, QueueStatus]] = {}
        zero = [0.0, 0.0, 0.0]
        for q in self.queues.values():
            per_pool: dict[str, QueueStatus] = {}
            for pool in self.pools:
                key = (q.name, pool)
                per_pool[pool] = QueueStatus(
                    queue=q.name,
                    pool=pool,
                    deserved=_res(self.deserved.get(key, zero)),
                    limit=_res(self.limit.get(key, zero)),
                    fairshare=_res(self.fair.get(key, zero)),
                    allocated=_res(self.acc.get(key, zero)),
                    requested=_res(self.requested.get(key, zero)),
                )
            out[q.name] = per_pool
        return out
