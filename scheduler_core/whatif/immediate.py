"""What a quota change would do right now, before it is saved.

The live cluster is read as the scheduling loop reads it (`adapters.load_snapshot`), the
change is applied to that frozen copy, and the engine runs the cycles the loop would run
after a Save (until nothing more changes, at most `MAX_CYCLES`). The workloads running
before and pending after are those the change preempts; pending before and running after,
those it starts. The fair shares come from the first cycle of the same runs, with and
without the change, so every figure shown comes from one computation. Nothing is written.
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
from scheduler_core.engine.snapshot import STATUS_RUNNING

if TYPE_CHECKING:
    from scheduler_core.access import AnyUser

MAX_CYCLES = 5
"""Cycles run after the change: reclaim is paced per cycle, so a big change can take more
than one; the loop runs them back to back, within a second."""

EPSILON = 1e-9


@dataclass(frozen=True)
class AffectedWorkload:
    """A workload the change would preempt or start. `name` and `project` are None when
    the viewer may not see its project."""

    workload_id: int | None
    name: str | None
    project: str | None
    gpus: float


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

    @property
    def changes_nothing_now(self) -> bool:
        return not self.preempted and not self.started


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
    running_before = {w.id: w for w in live.snapshot.workloads if w.status == STATUS_RUNNING}
    running_after = {w.id: w for w in after_snapshot.workloads if w.status == STATUS_RUNNING}
    return QuotaChangeEffect(
        preempted=tuple(
            names.workload(w) for key, w in running_before.items() if key not in running_after
        ),
        started=tuple(
            names.workload(w) for key, w in running_after.items() if key not in running_before
        ),
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

    def workload(self, spec: WorkloadSpec) -> AffectedWorkload:
        row = self.live.workloads[int(spec.id)]
        gpus = held_gpus(spec)
        if not self._sees("project", row.project_id):
            return AffectedWorkload(workload_id=None, name=None, project=None, gpus=gpus)
        return AffectedWorkload(workload_id=row.pk, name=row.name, project=spec.project, gpus=gpus)
