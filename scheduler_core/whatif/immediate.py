"""What a quota change would do right now, before it is saved.

The live cluster is read as the scheduling loop reads it (`adapters.load_snapshot`), the
change is applied to that frozen copy, and the engine runs the cycles the loop would run
after a Save (until nothing more changes, at most `MAX_CYCLES`). Everything those cycles
do to running work is named: the workloads running before and pending after are those the
change preempts; those running before and after but moved (consolidation, or evicted and
placed again) are moved; those left with fewer or more pods (elastic) shrink or grow;
pending before and running after, those it starts. The fair shares come from the first
cycle of the same runs, with and without the change, so every figure shown comes from one
computation. Nothing is written.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from scheduler_core import engine
from scheduler_core.access import visible_department_ids, visible_project_ids
from scheduler_core.adapters import LiveSnapshot, load_snapshot
from scheduler_core.engine import ClusterSnapshot, QueueSpec, Resources, WorkloadSpec
from scheduler_core.engine.decisions import CycleResult, Evict, Move
from scheduler_core.engine.snapshot import STATUS_RUNNING

if TYPE_CHECKING:
    from scheduler_core.access import AnyUser

MAX_CYCLES = 5
"""Cycles run after the change: reclaim is paced per cycle, so a big change can take more
than one; the loop runs them back to back, within a second."""

EPSILON = 1e-9


@dataclass(frozen=True)
class AffectedWorkload:
    """A workload the change would preempt, move, shrink, grow or start. `name` and
    `project` are None when the viewer may not see its project. `pods_before`/`pods_after`
    count its pods (0 when not running); `nodes_before`/`nodes_after` name their nodes."""

    workload_id: int | None
    name: str | None
    project: str | None
    gpus: float
    pods_before: int = 0
    pods_after: int = 0
    nodes_before: tuple[str, ...] = ()
    nodes_after: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunningChange:
    """One kind of thing Save would do to workloads (`verb`: preempt, move, shrink, grow,
    start), and to which."""

    verb: str
    workloads: tuple[AffectedWorkload, ...]


@dataclass(frozen=True)
class ShareShift:
    """A queue's fair share in a pool before and after the change (GPUs). `name` is None
    when the viewer may not see the queue."""

    kind: str
    name: str | None
    pool: str
    before: float
    after: float


@dataclass(frozen=True)
class QuotaChangeEffect:
    """What saving a quota change would do now, and the fair shares it moves."""

    preempted: tuple[AffectedWorkload, ...]
    started: tuple[AffectedWorkload, ...]
    shares: tuple[ShareShift, ...]
    cycles: int
    moved: tuple[AffectedWorkload, ...] = ()
    shrunk: tuple[AffectedWorkload, ...] = ()
    grown: tuple[AffectedWorkload, ...] = ()

    @property
    def changes(self) -> tuple[RunningChange, ...]:
        """What Save would do, one entry per verb that applies, most disruptive first."""
        kinds = (
            ("preempt", self.preempted),
            ("move", self.moved),
            ("shrink", self.shrunk),
            ("grow", self.grown),
            ("start", self.started),
        )
        return tuple(RunningChange(verb, found) for verb, found in kinds if found)

    @property
    def changes_nothing_now(self) -> bool:
        return not self.changes


def quota_change_effect(
    *,
    user: AnyUser,
    kind: str,
    owner_id: int,
    pool: str,
    gpus: float,
    limit_gpus: float | None,
    now: datetime | None = None,
) -> QuotaChangeEffect:
    """The effect of giving queue (`kind`, `owner_id`) `gpus` deserved and `limit_gpus`
    (None: no limit) in `pool`, described for `user` (the access rule hides the names of
    workloads and queues of projects they may not see)."""
    with transaction.atomic():  # one read transaction: every query sees the same cluster
        live = load_snapshot(now or timezone.now())
    queue = live.queue_key(kind, owner_id)
    if queue is None:
        raise ValueError(f"no {kind} with id {owner_id}")
    changed = with_quota(live.snapshot, queue=queue, pool=pool, gpus=gpus, limit_gpus=limit_gpus)
    before = engine.run_cycle(live.snapshot)
    after_snapshot, results = engine.run_until_stable(changed, max_cycles=MAX_CYCLES)
    names = _Names(live, user)
    running = _running_changes(live.snapshot, after_snapshot, results)
    return QuotaChangeEffect(
        preempted=tuple(names.workload(b, None) for b, _ in running["preempted"]),
        moved=tuple(names.workload(b, a) for b, a in running["moved"]),
        shrunk=tuple(names.workload(b, a) for b, a in running["shrunk"]),
        grown=tuple(names.workload(b, a) for b, a in running["grown"]),
        started=tuple(names.workload(None, a) for _, a in running["started"]),
        shares=tuple(
            ShareShift(
                kind=live.queue_owners[name][0],
                name=names.queue(name),
                pool=pool_name,
                before=old.fairshare.gpus,
                after=new.fairshare.gpus,
            )
            for name, pools in results[0].queues.items()
            for pool_name, new in pools.items()
            if (old := before.queues.get(name, {}).get(pool_name)) is not None
            and math.isfinite(old.fairshare.gpus + new.fairshare.gpus)
            and abs(old.fairshare.gpus - new.fairshare.gpus) > EPSILON
        ),
        cycles=len(results),
    )


Pair = tuple[WorkloadSpec | None, WorkloadSpec | None]


def _running_changes(
    before: ClusterSnapshot, after: ClusterSnapshot, results: list[CycleResult]
) -> dict[str, list[Pair]]:
    """Each workload whose running changes between `before` and `after`, as (before, after)
    specs (None where it does not run), by what happens to it. A workload that a cycle
    moved or evicted and that runs again at the end was moved, even onto the same nodes
    (its pods restarted)."""
    old = {w.id: w for w in before.workloads if w.status == STATUS_RUNNING}
    new = {w.id: w for w in after.workloads if w.status == STATUS_RUNNING}
    relocated = {
        d.workload for result in results for d in result.decisions if isinstance(d, Move | Evict)
    }
    kept = [(old[key], new[key]) for key in old if key in new]
    found: dict[str, list[Pair]] = {
        "preempted": [(w, None) for key, w in old.items() if key not in new],
        "moved": [(b, a) for b, a in kept if b.id in relocated],
        "shrunk": [(b, a) for b, a in kept if len(a.pods) < len(b.pods)],
        "grown": [(b, a) for b, a in kept if len(a.pods) > len(b.pods)],
        "started": [(None, w) for key, w in new.items() if key not in old],
    }
    return found


def with_quota(
    snapshot: ClusterSnapshot, *, queue: str, pool: str, gpus: float, limit_gpus: float | None
) -> ClusterSnapshot:
    """`snapshot` with `queue` deserving `gpus` and capped at `limit_gpus` in `pool` (CPU and
    memory as they were), as the saved Quota row would be read."""

    def changed(spec: QueueSpec) -> QueueSpec:
        if spec.name != queue:
            return spec
        quota = spec.quota.get(pool, Resources(0.0, math.inf, math.inf))
        limit = spec.limit.get(pool, Resources(math.inf, math.inf, math.inf))
        new_limit = math.inf if limit_gpus is None else float(limit_gpus)
        return dataclasses.replace(
            spec,
            quota={**spec.quota, pool: dataclasses.replace(quota, gpus=float(gpus))},
            limit={**spec.limit, pool: dataclasses.replace(limit, gpus=new_limit)},
        )

    return dataclasses.replace(snapshot, queues=tuple(changed(q) for q in snapshot.queues))


def held_gpus(workload: WorkloadSpec) -> float:
    """The GPUs a running workload holds (its pods' requests)."""
    requests = {g.name: g.request.gpus for g in workload.groups}
    return sum(requests.get(pod.group, 0.0) for pod in workload.pods)


class _Names:
    """Workload and queue names as `user` may see them."""

    def __init__(self, live: LiveSnapshot, user: AnyUser) -> None:
        self.live = live
        self.projects = visible_project_ids(user)
        self.departments = visible_department_ids(user)

    def _sees(self, kind: str, pk: int) -> bool:
        visible = self.projects if kind == "project" else self.departments
        return visible is None or pk in visible

    def queue(self, key: str) -> str | None:
        kind, pk = self.live.queue_owners[key]
        return key if self._sees(kind, pk) else None

    def workload(self, before: WorkloadSpec | None, after: WorkloadSpec | None) -> AffectedWorkload:
        """The workload running as `before` now and as `after` once the change is saved
        (None: not running then), its GPUs those it holds while running (before, if it
        ran)."""
        spec = before or after
        assert spec is not None
        row = self.live.workloads[int(spec.id)]
        visible = self._sees("project", row.project_id)
        return AffectedWorkload(
            workload_id=row.pk if visible else None,
            name=row.name if visible else None,
            project=spec.project if visible else None,
            gpus=held_gpus(spec),
            pods_before=len(before.pods) if before else 0,
            pods_after=len(after.pods) if after else 0,
            nodes_before=_nodes(before),
            nodes_after=_nodes(after),
        )


def _nodes(spec: WorkloadSpec | None) -> tuple[str, ...]:
    """The nodes `spec`'s pods run on, each once, in name order."""
    return tuple(sorted({pod.node for pod in spec.pods})) if spec else ()
