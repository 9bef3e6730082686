"""A session: one cycle's working state over a frozen snapshot, and the hooks actions
call on it (KAI-Scheduler's framework.Session).

It builds the node/pool index and workload state, keeps per-queue allocations up to date
as statements bind and unbind pods, and answers what actions ask: job and victim order,
gangs, protection from eviction (plugin hooks, asked once per workload), and queue order,
fairshare, quota and admission (the queue hooks of the proportion plugin). `result()`
turns the final state into a CycleResult (see result.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from scheduler_core.engine.decisions import CycleResult, QueueStatus
from scheduler_core.engine.framework.alike_window import ALIKE_WINDOW, AlikeWindow
from scheduler_core.engine.framework.plugin import Plugin, answering, build_plugins, first_answer
from scheduler_core.engine.framework.queue_context import Key, QueueContext, Vec
from scheduler_core.engine.framework.queue_hooks import QueueHooks
from scheduler_core.engine.framework.result import build_result
from scheduler_core.engine.framework.state import (
    NodeState,
    PoolIndex,
    WorkloadState,
    priority_order,
)
from scheduler_core.engine.framework.statement import Statement
from scheduler_core.engine.lost_work import room_wait_start
from scheduler_core.engine.preemption_loops import REASON_KIND as LOOP_REASON_KIND
from scheduler_core.engine.preemption_loops import loop_hold
from scheduler_core.engine.reasons import behind_alike
from scheduler_core.engine.resources import EPSILON
from scheduler_core.engine.snapshot import ClusterSnapshot, PodPlacement, QueueSpec

__all__ = ["Key", "Session", "Vec"]

T = TypeVar("T")


def _partial(used: float) -> int:
    """1 when a device holds fractions and still has room, else 0."""
    return 1 if EPSILON < used < 1.0 - EPSILON else 0


class Session:
    """Working state of one cycle (see module doc)."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.now = snapshot.now
        self.plugins: list[Plugin] = build_plugins(snapshot.plugins)
        # per hook, only the plugins that can answer it (see plugins.answering)
        self._job_order_plugins = answering(self.plugins, "job_order_key")
        self._victim_order_plugins = answering(self.plugins, "victim_order_key")
        self._gang_plugins = answering(self.plugins, "gang_counts")
        self._protection_plugins = answering(self.plugins, "protected_until")
        self.commits = 0
        self.nodes: dict[str, NodeState] = {}
        self.pools: dict[str, PoolIndex] = self._index_nodes(snapshot)
        self.queues: dict[str, QueueSpec] = {q.name: q for q in snapshot.queues}
        # what each (queue, pool) holds, departments and projects alike (and the part
        # held by non-preemptible work): the vectors are updated in place as pods bind
        self.acc: dict[Key, Vec] = {}
        self.acc_np: dict[Key, Vec] = {}
        self.running_by_pool: dict[str, dict[str, WorkloadState]] = {p: {} for p in self.pools}
        self.running_by_queue: dict[Key, dict[str, WorkloadState]] = {}
        # answers of the plugin hooks, asked once per workload (or kind of workload)
        self._victim_keys: dict[str, tuple[float, ...]] = {}
        self._job_keys: dict[str, tuple[float, ...]] = {}
        self._gang_counts: dict[int, dict[str, int]] = {}
        self._gang_requests: dict[int, Vec] = {}
        # preemptible running workloads per (queue, pool), in victim order; dropped
        # whenever that queue binds or unbinds a pod
        self._queue_victims: dict[Key, list[WorkloadState]] = {}
        # (project, pool) -> its department, for every queue that bound or unbound a pod
        # since the reclaim action last took them (see take_touched_queues)
        self._touched: dict[Key, str] = {}
        self._candidates: dict[str, list[str]] = {}
        self.pool_names = list(self.pools)
        """Every pool, in snapshot order (shared: read only)."""
        self._protection: dict[str, float | None] = {}
        self.workloads: dict[str, WorkloadState] = {}
        self.reasons: dict[str, dict[str, tuple[str, str]]] = {}
        # (workload id, pool) -> a fact every later reason of that pool ends with
        self._reason_notes: dict[tuple[str, str], str] = {}
        # pending workload id -> when its wait for room counts from, for those whose
        # wait paid for a reclaim of this cycle (see actions/room_waits.py)
        self.room_wait_paid: dict[str, float] = {}
        # (action, pool, WorkloadState.kind_key) -> (commits, verdict): see alike()
        self._alike: dict[tuple[object, ...], tuple[int, Any]] = {}
        self._load_workloads(snapshot)
        hooks = first_answer(self.plugins, lambda p: p.queue_hooks())
        assert hooks is not None, "the proportion plugin is always enabled"
        self._queue_hooks: QueueHooks = hooks
        self.held: set[str] = self._hold_loops()
        self._window: AlikeWindow | None = None
        # the workloads the actions may look at this cycle (all but parked and held)
        self._in_view: list[WorkloadState] | None = None
        for plugin in answering(self.plugins, "on_session_open"):
            plugin.on_session_open(self)

    def _index_nodes(self, snapshot: ClusterSnapshot) -> dict[str, PoolIndex]:
        """Every node's working state (in self.nodes), and each pool's index of them."""
        by_pool: dict[str, list[NodeState]] = {p.name: [] for p in snapshot.pools}
        for i, spec in enumerate(snapshot.nodes):
            node = NodeState(spec, i)
            self.nodes[spec.name] = node
            by_pool.setdefault(spec.pool, []).append(node)
        return {p.name: PoolIndex(p, by_pool[p.name]) for p in snapshot.pools}

    def _load_workloads(self, snapshot: ClusterSnapshot) -> None:
        """Every workload's working state, the running ones bound to their pods."""
        kinds: dict[tuple[object, ...], int] = {}
        for wspec in snapshot.workloads:
            project = self.queues.get(wspec.project)
            dept = project.parent if project is not None and project.parent else wspec.project
            w = WorkloadState(wspec, dept, kinds)
            self.workloads[w.id] = w
            if not w.pods:
                continue
            pods = w.pods
            w.pods = []
            if w.pool is None:
                w.pool = self.nodes[pods[0].node].pool
            for pod in pods:
                self.bind_pod(w, self._with_devices(w, pod), len(w.pods))
            w.initial_pods = tuple(w.pods)

    def _hold_loops(self) -> set[str]:
        """The pending workloads held for a preemption loop (preemption_loops.loop_hold),
        with their reason; no action starts them this cycle."""
        held: set[str] = set()
        for w in self.workloads.values():
            if w.pods or not w.spec.quick_evictions:
                continue
            for pool in self.candidate_pools(w):
                reason = loop_hold(w.spec, self.pools[pool].config, self.now)
                if reason is not None:
                    held.add(w.id)
                    self.set_reason(w, pool, LOOP_REASON_KIND, reason)
        return held

    # ----------------------------------------------------------------- pools
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
                found = self.pool_names  # shared: callers only read it
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
        self._queue_victims.pop(key, None)
        self._touched[key] = w.department
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
        self._queue_victims.pop(key, None)
        self._touched[key] = w.department
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
        for plugin in answering(self.plugins, "on_session_close"):
            plugin.on_session_close()

    def statement(self) -> Statement:
        """A new statement over this session."""
        return Statement(self)

    def on_commit(self) -> None:
        """Called by a statement that commits (invalidates caches of failures)."""
        self.commits += 1

    def take_touched_queues(self, pool: str) -> dict[Key, str]:
        """The (project, pool) keys of `pool` that bound or unbound a pod since the
        last call for `pool` (or since the session opened), with their departments;
        they count as seen from now on."""
        touched = self._touched
        found = {key: dept for key, dept in touched.items() if key[1] == pool}
        for key in found:
            del touched[key]
        return found

    # ------------------------------------------------------------ plugin hooks
    def job_key(self, w: WorkloadState) -> tuple[float, ...]:
        """Order of `w` inside its queue (smaller first): the first job-order plugin's
        answer, else priority order."""
        cached = self._job_keys.get(w.id)
        if cached is None:
            for plugin in self._job_order_plugins:
                cached = plugin.job_order_key(w)
                if cached is not None:
                    break
            else:
                cached = priority_order(w)
            self._job_keys[w.id] = cached
        return cached

    def victim_key(self, w: WorkloadState) -> tuple[float, ...]:
        """Order in which `w` is picked as a victim (smaller first)."""
        cached = self._victim_keys.get(w.id)
        if cached is None:
            for plugin in self._victim_order_plugins:
                cached = plugin.victim_order_key(self, w)
                if cached is not None:
                    break
            else:
                cached = (w.priority,)
            self._victim_keys[w.id] = cached
        return cached

    def gang_counts(self, w: WorkloadState) -> dict[str, int]:
        """Pods per group that must start together (do not modify the returned dict).
        They depend on the pod groups only, so workloads of one kind share them."""
        cached = self._gang_counts.get(w.kind_key)
        if cached is None:
            for plugin in self._gang_plugins:
                cached = plugin.gang_counts(w)
                if cached is not None:
                    break
            else:
                cached = w.min_counts()
            self._gang_counts[w.kind_key] = cached
        return cached

    def gang_request(self, w: WorkloadState) -> Vec:
        """Resources of the gang minimum of `w` (do not modify the returned list)."""
        cached = self._gang_requests.get(w.kind_key)
        if cached is None:
            cached = list(w.request_of(self.gang_counts(w)))
            self._gang_requests[w.kind_key] = cached
        return cached

    def protection(self, w: WorkloadState) -> float | None:
        """Until when `w` may not be evicted whole (min guaranteed runtime), or None."""
        if w.id in self._protection:
            return self._protection[w.id]
        found: float | None = None
        for plugin in self._protection_plugins:
            until = plugin.protected_until(self, w)
            if until is not None:
                found = until
                break
        self._protection[w.id] = found
        return found

    def queue_victims(self, queue: str, pool: str) -> list[WorkloadState]:
        """Preemptible running workloads of `queue` in `pool`, in victim order (do not
        modify the returned list; it is kept until the queue binds or unbinds a pod)."""
        key = (queue, pool)
        found = self._queue_victims.get(key)
        if found is None:
            running = self.running_by_queue.get(key, {})
            found = sorted((v for v in running.values() if v.preemptible), key=self.victim_key)
            self._queue_victims[key] = found
        return found

    # ------------------------------------------------------------ queue hooks
    def queue_key(self, queue: str, w: WorkloadState, pool: str, extra: Vec) -> tuple[object, ...]:
        """Order of `queue` (a department or a project) in `pool` serving `w`, which
        takes `extra` (smaller first): one level of the queue tree (actions/queue_tree)."""
        return self._queue_hooks.queue_order_key(queue, w, pool, extra)

    def queue_key_inputs(self, queue: str, pool: str) -> object:
        """What queue_key of `queue` depends on that may change within the session: the
        same inputs (and candidate) give the same key."""
        return self._queue_hooks.queue_order_inputs(queue, pool)

    def victim_queue_key(self, queue: str, pool: str, minus: Sequence[float]) -> tuple[object, ...]:
        """Order in which queues (of one level) give up a running workload holding
        `minus` to a reclaimer, judged on what they hold now (smaller first)."""
        return self._queue_hooks.victim_queue_key(queue, pool, minus)

    def over_fairshare(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` exceed its fairshare (on a governed resource) with `extra`?"""
        return self._queue_hooks.over_fairshare(queue, pool, extra)

    def over_fairshare_by(self, queue: str, pool: str, extra: Vec) -> float:
        """GPUs `queue` would hold in `pool` over its fairshare with `extra` (0 when
        within)."""
        return self._queue_hooks.over_fairshare_by(queue, pool, extra)

    def above_fairshare(self, queue: str, pool: str) -> bool:
        """Does `queue` hold more than its fairshare of a governed resource now?"""
        return self._queue_hooks.above_fairshare(queue, pool)

    def within_deserved(self, queue: str, pool: str, extra: Vec) -> bool:
        """Would `queue` stay within its deserved quota with `extra`?"""
        return self._queue_hooks.within_deserved(queue, pool, extra)

    def beyond_deserved(self, queue: str, level: str, pool: str, extra: Vec) -> str | None:
        """If `queue` (a project or department: `level`) would exceed its deserved quota
        in `pool` with `extra`, that fact with its figures, else None."""
        return self._queue_hooks.beyond_deserved(queue, level, pool, extra)

    def spare_gpus(self, queue: str, pool: str) -> float:
        """GPUs `queue` holds in `pool` above its deserved quota."""
        return self._queue_hooks.spare_gpus(queue, pool)

    def may_give_back(
        self, queue: str, pool: str, freed: tuple[float, float, float], deserved_mode: bool
    ) -> bool:
        """May `queue` give `freed` back to a reclaimer: before it is taken, the queue
        is over its fairshare (or, in `deserved_mode`, over its deserved quota) on a
        resource it gives?"""
        return self._queue_hooks.may_give_back(queue, pool, freed, deserved_mode)

    def straddle_reason(
        self, queue: str, level: str, pool: str, freed: tuple[float, float, float]
    ) -> str | None:
        """If giving back `freed` takes `queue` (a project or department: `level`) from
        above its deserved quota to below it, that fact with its figures, else None."""
        return self._queue_hooks.straddle_reason(queue, level, pool, freed)

    def could_give_back(self, queue: str, pool: str, deserved_mode: bool) -> bool:
        """Could `queue` give anything back at all (see may_give_back)? False stays
        False while allocations only go down."""
        return self._queue_hooks.could_give_back(queue, pool, deserved_mode)

    def admission_problem(self, w: WorkloadState, pool: str, extra: Vec) -> tuple[str, str] | None:
        """(kind, reason) why `w` may not take `extra` more in quota pool `pool`
        (limits, and the in-quota rule of non-preemptible work), or None when it may."""
        return self._queue_hooks.admission_problem(w, pool, extra)

    def fairshare_blocked(self, queue: str, level: str, pool: str, extra: Vec) -> str:
        """Why `queue` (a project or department: `level`) waits over its fairshare,
        naming the figures of the resource that is over."""
        return self._queue_hooks.fairshare_blocked(queue, level, pool, extra)

    def queue_statuses(self) -> dict[str, dict[str, QueueStatus]]:
        """Every queue's figures in every pool, as they stand now."""
        return self._queue_hooks.queue_statuses()

    # ------------------------------------------------------------ reasons
    def alike(self, key: tuple[object, ...], compute: Callable[[], T]) -> T:
        """`compute()` for a verdict about a waiting workload that only depends on its
        kind key (in `key`) and on the state: computed again once something commits,
        shared by alike workloads until then (a long queue holds thousands of them)."""
        found = self._alike.get(key)
        if found is not None and found[0] == self.commits:
            return cast(T, found[1])
        value = compute()
        self.note_alike(key, value)
        return value

    def known_alike(self, key: tuple[object, ...]) -> Any | None:
        """The verdict noted under `key` (see alike) if nothing committed since, or None."""
        found = self._alike.get(key)
        return found[1] if found is not None and found[0] == self.commits else None

    def note_alike(self, key: tuple[object, ...], value: object) -> None:
        """Note a verdict that alike workloads share until something commits (for a
        verdict that alike() cannot compute: one whose try may commit)."""
        self._alike[key] = (self.commits, value)

    def set_reason(self, w: WorkloadState, pool: str, kind: str, message: str) -> None:
        """Record why `w` could not start in `pool` (the last word wins, followed by the
        note kept for it, if any: see keep_note)."""
        note = self._reason_notes.get((w.id, pool)) if self._reason_notes else None
        if note is not None and note not in message:
            message = f"{message}; {note}"
        self.reasons.setdefault(w.id, {})[pool] = (kind, message)

    def keep_note(self, w: WorkloadState, pool: str, note: str) -> None:
        """Add a fact to why `w` could not start in `pool` that stays whatever later
        actions say (an action that did not act for it, and why)."""
        self._reason_notes[(w.id, pool)] = note
        current = self.reasons.get(w.id, {}).get(pool)
        if current is not None:
            self.set_reason(w, pool, *current)

    def add_reason(self, w: WorkloadState, pool: str, kind: str, message: str) -> None:
        """Add to why `w` could not start in `pool`: a capacity reason is kept in front
        of the new one (both facts matter), anything else is replaced."""
        current = self.reasons.get(w.id, {}).get(pool)
        if current is not None and current[0] == "capacity" and current[1] not in message:
            message = f"{current[1]}; {message}"
        self.set_reason(w, pool, kind, message)

    def _room_wait_from(self, w: WorkloadState) -> float:
        """When the wait for room of `w` counts from, this cycle's spending included."""
        since = self.room_wait_paid.get(w.id)
        return room_wait_start(w.spec) if since is None else since

    def room_waited(self, w: WorkloadState, gpus: float) -> float:
        """GPU-seconds the pending workload `w` of `gpus` GPUs has waited for room and
        not spent on a reclaim (lost_work.waited_gpu_seconds, less this cycle's spending)."""
        return gpus * max(self.now - self._room_wait_from(w), 0.0)

    def pay_room_wait(self, w: WorkloadState, gpus: float, spent: float) -> None:
        """Spend `spent` GPU-seconds of the wait of `w` (of `gpus` GPUs): its wait for
        room counts from that much later."""
        if gpus > 0.0:
            self.room_wait_paid[w.id] = min(self._room_wait_from(w) + spent / gpus, self.now)

    def pending_workloads(self, *, with_parked: bool = False) -> list[WorkloadState]:
        """Workloads without pods (that have not failed, are not held for a preemption
        loop and, unless `with_parked`, are in view: see alike_window), in snapshot
        order: those the actions may start."""
        if with_parked:
            held = self.held
            return [
                w
                for w in self.workloads.values()
                if not w.pods and not w.failed and w.id not in held
            ]
        if self._in_view is None:
            window = self.alike_window
            held = self.held
            self._in_view = [
                w for w in self.workloads.values() if w.id not in held and not window.parked(w.id)
            ]
        return [w for w in self._in_view if not w.pods and not w.failed]

    @property
    def alike_window(self) -> AlikeWindow:
        """Which waiting workloads the actions do not look at yet (framework/alike_window.py)."""
        if self._window is None:
            pending = self.pending_workloads(with_parked=True)
            self._window = AlikeWindow(pending, self.job_key, ALIKE_WINDOW)
        return self._window

    def let_in_after(self, w: WorkloadState) -> list[WorkloadState]:
        """`w` started: the alike workloads parked behind it that are now in view."""
        if self._window is None:
            return []
        batch = self._window.let_in_after(w)
        if batch and self._in_view is not None:
            self._in_view.extend(batch)
        return batch

    def reason_of(self, w: WorkloadState) -> dict[str, tuple[str, str]] | None:
        """Why `w` waits, per pool: its own reasons, or for a parked workload those of
        the alike one it waits behind (or, when that one started, that it comes next)."""
        own = self.reasons.get(w.id)
        if own or self._window is None:
            return own
        lead = self._window.lead_of(w.id)
        if lead is None:
            return own
        found = self.reasons.get(lead.id)
        if found and not lead.pods:
            return found
        return {"": ("capacity", behind_alike(w.project))}

    def more_alike(self) -> bool:
        """Did a workload that others wait behind start without letting them in?"""
        return self._window is not None and any(w.pods for w in self._window.leads())

    def waiting_workloads(self) -> list[WorkloadState]:
        """Every workload without pods that has not failed, held ones included."""
        return [w for w in self.workloads.values() if not w.pods and not w.failed]

    # ------------------------------------------------------------ result
    def result(self) -> CycleResult:
        """The decisions that turn the snapshot into the current state, plus the
        pending reasons and queue figures."""
        return build_result(self)
