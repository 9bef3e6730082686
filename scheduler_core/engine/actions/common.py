"""Helpers shared by actions: the pools and jobs an action looks at, queue-ordered
iteration, trying to start a workload, and freeing room by shrinking or evicting
victims."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scheduler_core.engine.actions.queue_tree import QueueTree
from scheduler_core.engine.framework.session import Session, Vec
from scheduler_core.engine.framework.state import NodeState, PoolIndex, WorkloadState
from scheduler_core.engine.framework.statement import Statement
from scheduler_core.engine.placement import place_pods
from scheduler_core.engine.resources import EPSILON
from scheduler_core.engine.snapshot import POLICY_QUOTA, PodPlacement


def quota_pools(session: Session, *, flag: str | None = None) -> list[PoolIndex]:
    """Pools under policy quota (optionally only those where config `flag` is on)."""
    return [
        p
        for p in session.pools.values()
        if p.config.policy == POLICY_QUOTA and (flag is None or getattr(p.config, flag))
    ]


def pending_for_pool(
    session: Session, pool: str, *, with_parked: bool = False
) -> list[WorkloadState]:
    """Pending workloads that may run in `pool` (see Session.pending_workloads)."""
    pending = session.pending_workloads(with_parked=with_parked)
    return [w for w in pending if pool in session.candidate_pools(w)]


def next_pod(w: WorkloadState) -> dict[str, int] | None:
    """One more pod for the first group below what it wants, or None when complete."""
    counts = w.pod_counts()
    for grp in w.groups:
        if counts[grp.name] < grp.pods:
            return {grp.name: 1}
    return None


def may_grow(w: WorkloadState) -> bool:
    """Is `w` a running elastic workload below its wanted pods that may grow this
    cycle (not evicted, nor shrunk since the cycle began)?"""
    return (
        bool(w.pods)
        and w.missing_pods() > 0
        and not w.evicted
        and len(w.pods) >= len(w.initial_pods)
    )


def jobs_for_pool(session: Session, pool: str) -> list[WorkloadState]:
    """What reclaim and preempt act for in `pool`: the pending workloads that may run
    there, and the running elastic workloads of the pool below their wanted pods, each
    asking for its next pod as a pending workload of one pod would (see asked)."""
    jobs = pending_for_pool(session, pool)
    jobs.extend(w for w in session.running_by_pool[pool].values() if may_grow(w))
    return jobs


def asked(session: Session, w: WorkloadState) -> tuple[dict[str, int], Vec]:
    """The pods per group `w` asks for now and what they take: a pending workload its
    gang minimum, a running elastic one its next pod (do not modify either)."""
    if not w.pods:
        return session.gang_counts(w), session.gang_request(w)
    one = next_pod(w)
    assert one is not None, "only workloads below their wanted pods ask for more"
    return one, list(w.request_of(one))


def asked_request(session: Session, w: WorkloadState) -> Vec:
    """What `w` asks for now (see asked)."""
    return asked(session, w)[1]


def ask_kind(w: WorkloadState) -> tuple[object, ...]:
    """What an action's verdict on `w` depends on besides the state: its kind, and
    for a running elastic workload the group of its next pod."""
    if not w.pods:
        return (w.kind_key,)
    one = next_pod(w)
    return (w.kind_key, next(iter(one)) if one else None)


def fits_now(session: Session, pool: PoolIndex, w: WorkloadState, counts: dict[str, int]) -> bool:
    """Would `counts` more pods of `w` fit the free capacity as it is (nothing changes)?"""
    stmt = session.statement()
    fits = try_start(session, stmt, w, pool, counts)
    stmt.discard()
    return fits


def in_queue_order(
    session: Session,
    pool: str,
    jobs: Iterable[WorkloadState],
    attempt: Callable[[WorkloadState], None],
    extra_of: Callable[[WorkloadState], Vec] | None = None,
    viable: Callable[[WorkloadState], bool] | None = None,
    skip: Callable[[WorkloadState], None] | None = None,
    frozen: Callable[[], bool] | None = None,
) -> None:
    """Call `attempt` on every job, always taking the best job of the best project of
    the best department next (queue order is a tree, re-evaluated lazily as allocations
    change it: see queue_tree.QueueTree). Jobs for which `viable` says False (a verdict
    that must not change within the action, and that depends on the job's kind and the
    state only, so a run of alike jobs is judged once) are handed to `skip` instead,
    without taking part in the ordering. Once `frozen` says True, the action promises
    not to change anything any more (e.g. its budget is spent): order no longer matters
    and the jobs left are handed over without ordering."""
    if extra_of is None:
        extra_of = session.gang_request
    head_ok: Callable[[str, WorkloadState], bool] | None = None
    if viable is not None:
        is_viable = viable
        # project -> (kind, commits) of the last job found not viable: alike jobs after
        # it are turned down without asking again
        blocked: dict[str, tuple[object, ...]] = {}

        def head_ok(project: str, w: WorkloadState) -> bool:
            mark = (ask_kind(w), session.commits)
            if blocked.get(project) == mark:
                return False
            if is_viable(w):
                return True
            blocked[project] = mark
            return False

    tree = QueueTree(session, pool, jobs, extra_of, session.job_key, head_ok, skip)
    while (w := tree.pop()) is not None:
        attempt(w)
        if w.pods:  # alike workloads parked behind it come into view (see alike_window)
            for behind in session.let_in_after(w):
                if pool in session.candidate_pools(behind):
                    tree.again(behind)
        if frozen is not None and frozen():
            for rest in tree.rest():
                if viable is None or viable(rest):
                    attempt(rest)
                elif skip is not None:
                    skip(rest)
            return


class Budget:
    """How many more times an action may do something disruptive this cycle
    (`limit` None = no bound)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0

    def spent(self) -> bool:
        """True once the bound is reached."""
        return self.limit is not None and self.used >= self.limit

    def use(self) -> None:
        """Count one more."""
        self.used += 1


def try_start(
    session: Session, stmt: Statement, w: WorkloadState, pool: PoolIndex, counts: dict[str, int]
) -> bool:
    """Place `counts` pods of `w` in `pool` within `stmt`; on failure nothing changes."""
    mark = stmt.mark()
    if place_pods(session, stmt, w, pool, counts):
        return True
    stmt.rollback(mark)
    return False


@dataclass(slots=True)
class VictimStep:
    """One way to free room: remove one pod of an elastic workload (`pod` set) or
    evict a workload whole (`pod` None)."""

    victim: WorkloadState
    pod: PodPlacement | None = None

    def freed(self) -> Vec:
        """What this step frees."""
        if self.pod is not None:
            grp = self.victim.group(self.pod.group)
            return [grp.gpus, grp.cpu, grp.memory]
        return list(self.victim.allocated())


def _taken_by(w: WorkloadState, pods: list[PodPlacement]) -> Vec:
    """What `pods` of `w` take (known from their groups, also once they are unbound:
    a victim's allocation is zero after its eviction)."""
    taken = [0.0, 0.0, 0.0]
    for pod in pods:
        grp = w.group(pod.group)
        taken[0] += grp.gpus
        taken[1] += grp.cpu
        taken[2] += grp.memory
    return taken


def shrink_pod(w: WorkloadState) -> PodPlacement | None:
    """The pod an elastic workload gives up next (last pod of the last group that is
    above its minimum), or None at its minimum."""
    counts = w.pod_counts()
    for grp in reversed(w.groups):
        if counts[grp.name] > grp.min_pods:
            for pod in reversed(w.pods):
                if pod.group == grp.name:
                    return pod
    return None


def pods_fit_back(session: Session, w: WorkloadState, pods: Sequence[PodPlacement]) -> bool:
    """Would `pods` of `w` all fit where they were, together? (Pods of one workload
    may share a node, and fractional ones a device: each one's room counts the
    others'.)"""
    cpu: dict[str, float] = {}
    mem: dict[str, float] = {}
    used: dict[tuple[str, int], float] = {}
    for pod in pods:
        node: NodeState = session.nodes[pod.node]
        if not node.ready:
            return False
        grp = w.group_map[pod.group]
        c = cpu.get(pod.node, node.used_cpu) + grp.cpu
        m = mem.get(pod.node, node.used_mem) + grp.memory
        if c > node.cap_cpu + EPSILON or m > node.cap_mem + EPSILON:
            return False
        cpu[pod.node] = c
        mem[pod.node] = m
        for d in pod.devices:
            u = used.get((pod.node, d), node.dev_used[d]) + pod.gpu_fraction
            if u > 1.0 + EPSILON:
                return False
            used[(pod.node, d)] = u
    return True


def free_and_place(
    session: Session,
    stmt: Statement,
    job: WorkloadState,
    pool: PoolIndex,
    counts: dict[str, int],
    victims: Iterable[WorkloadState],
    allowed: Callable[[VictimStep], bool],
    evict_kind: str,
    reason_for: Callable[[WorkloadState], str],
    elastic: list[WorkloadState] | None = None,
    admits: Callable[[WorkloadState, Vec], bool] | None = None,
) -> bool:
    """Shrink elastic victims one pod at a time, then evict whole victims, in the given
    order and only where `allowed`, until `job` fits (nothing, when room an earlier
    eviction freed already holds it); then give back whatever turns out not to be
    needed. `victims` is consumed lazily; `elastic` lists the elastic ones
    (taken from `victims` when not given). `admits(w, more)`, when given, says whether
    the queue limits let `w` take `more`: the job is placed only once they let it take
    its pods, and a victim is put back only where they let it take its own back (room
    made under a limit stays made). True when `job` was placed (the caller commits)."""
    if elastic is None:
        victims = list(victims)
        elastic = [v for v in victims if v.elastic]
    room = _RoomMaker(session, stmt, job, pool, counts, allowed, evict_kind, reason_for, admits)
    # room an earlier eviction of this action freed may already hold it: take nothing
    placed = room.place() or room.shrink(elastic) or room.evict(victims)
    if placed:
        room.put_back()
    return placed


class _RoomMaker:
    """The steps of free_and_place, with the victims taken so far (to put back those
    that turn out not to be needed)."""

    def __init__(
        self,
        session: Session,
        stmt: Statement,
        job: WorkloadState,
        pool: PoolIndex,
        counts: dict[str, int],
        allowed: Callable[[VictimStep], bool],
        evict_kind: str,
        reason_for: Callable[[WorkloadState], str],
        admits: Callable[[WorkloadState, Vec], bool] | None,
    ) -> None:
        self.session = session
        self.stmt = stmt
        self.job = job
        self.pool = pool
        self.counts = counts
        self.allowed = allowed
        self.evict_kind = evict_kind
        self.reason_for = reason_for
        self.admits = admits
        self.request = list(job.request_of(counts))
        # each step taken: the step, the victim's flags before it, the pods it took
        self.applied: list[tuple[VictimStep, tuple[object, ...], list[PodPlacement]]] = []

    def place(self) -> bool:
        """Place the job if it fits now (and the queue limits admit it)."""
        if self.request[0] > self.pool.free_gpus + EPSILON:
            return False
        if self.admits is not None and not self.admits(self.job, self.request):
            return False
        return try_start(self.session, self.stmt, self.job, self.pool, self.counts)

    def shrink(self, elastic: list[WorkloadState]) -> bool:
        """Take elastic victims' pods, one at a time, round by round, until the job is
        placed (True) or none may give more. A victim turned down (or at its minimum)
        stays so for the rest of this phase: its next pod is the same one and
        allocations only went down."""
        shrinking = [v for v in elastic if v.extra_pods() > 0]
        while shrinking:
            kept: list[WorkloadState] = []
            for v in shrinking:
                pod = shrink_pod(v)
                if pod is None:
                    continue
                step = VictimStep(v, pod)
                if not self.allowed(step):
                    continue
                kept.append(v)
                flags = v.flags()
                self.stmt.unbind(v, pod)
                self.stmt.note_reason(v, self.reason_for(v), self.job, self.evict_kind)
                self.applied.append((step, flags, [pod]))
                if self.place():
                    return True
            shrinking = kept
        return False

    def evict(self, victims: Iterable[WorkloadState]) -> bool:
        """Evict whole victims in order until the job is placed (True)."""
        for v in victims:
            if not v.pods or self.session.protection(v) is not None:
                continue
            step = VictimStep(v)
            if not self.allowed(step):
                continue
            flags = v.flags()
            pods = list(v.pods)
            self.stmt.evict(v, self.evict_kind, self.reason_for(v), self.job)
            self.applied.append((step, flags, pods))
            if self.place():
                return True
        return False

    def put_back(self) -> None:
        """Evict as little as possible: put back, last taken first, the victims whose
        pods still fit where they were (and whose queue limits let them)."""
        gone: set[str] = set()  # victims whose whole eviction stays
        for step, flags, pods in reversed(self.applied):
            v = step.victim
            if v.id in gone:
                continue
            if not pods_fit_back(self.session, v, pods) or (
                self.admits is not None and not self.admits(v, _taken_by(v, pods))
            ):
                if step.pod is None:
                    gone.add(v.id)
                continue
            for p in pods:
                self.stmt.bind(v, p)
            self.stmt.restore_flags(v, flags)
