"""The queue view: per pool, each department and project with deserved quota, limit,
fairshare and allocation as the last cycle saw them, and the ordered pending workloads with
their reasons ("why is my job pending")."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Department, NodePool, Project, QueueState, Workload


@dataclass
class QueueRow:
    """One department or project queue in one pool."""

    kind: str  # "department" | "project"
    id: int
    name: str
    parent: str | None
    rank: int
    over_quota_weight: float
    deserved_gpus: float
    limit_gpus: float | None
    fairshare_gpus: float
    allocated_gpus: float
    requested_gpus: float
    pending: int
    running: int

    @property
    def pending_demand_gpus(self) -> float:
        return max(self.requested_gpus - self.allocated_gpus, 0.0)


@dataclass
class PoolQueues:
    """The queues and ordered pending list of one pool."""

    pool: NodePool
    departments: list[QueueRow] = field(default_factory=list)
    projects: list[QueueRow] = field(default_factory=list)
    pending: list[Workload] = field(default_factory=list)
    # What the API shows of `pending`: how many there are and the first page of them.
    pending_total: int = 0
    pending_page: list[Workload] = field(default_factory=list)


def _row(state: QueueState, owner: Department | Project) -> QueueRow:
    project = owner if isinstance(owner, Project) else None
    return QueueRow(
        kind="project" if project is not None else "department",
        id=owner.pk,
        name=owner.name,
        parent=project.department.name if project is not None else None,
        rank=owner.rank,
        over_quota_weight=owner.over_quota_weight,
        deserved_gpus=state.deserved_gpus,
        limit_gpus=state.limit_gpus,
        fairshare_gpus=state.fairshare_gpus,
        allocated_gpus=state.allocated_gpus,
        requested_gpus=state.requested_gpus,
        pending=state.pending_count,
        running=state.running_count,
    )


def pending_in_pool(pool: NodePool, workload: Workload) -> bool:
    """Whether a pending workload may run in `pool` (no candidate pools means any)."""
    choices = [c.pool_id for c in workload.pool_choices.all()]
    return not choices or pool.pk in choices


def queue_overview(*, user, pool: NodePool | None = None) -> list[PoolQueues]:
    """Queues per pool as `user` may see them, in a constant number of queries."""
    pools = [pool] if pool is not None else list(NodePool.objects.order_by("name"))
    visible_projects = Project.objects.visible_to(user)
    visible_departments = Department.objects.visible_to(user)
    states = (
        QueueState.objects.filter(pool__in=pools)
        .filter(
            Q(project__in=visible_projects.values("pk"))
            | Q(department__in=visible_departments.values("pk"))
        )
        .select_related("pool", "department", "project", "project__department")
    )
    by_pool = {p.pk: PoolQueues(pool=p) for p in pools}
    for state in states:
        target = by_pool[state.pool_id]
        if state.project is not None:
            target.projects.append(_row(state, state.project))
        elif state.department is not None:
            target.departments.append(_row(state, state.department))
    pending = list(
        Workload.objects.visible_to(user)
        .filter(status=WorkloadStatus.PENDING)
        .select_related("project", "project__department", "submitted_by")
        .prefetch_related("pool_choices")
        .order_by("project__name", "queue_position", "submitted_at", "id")
    )
    for queues in by_pool.values():
        queues.departments.sort(key=lambda r: (-r.rank, r.name))
        queues.projects.sort(key=lambda r: (r.parent or "", -r.rank, r.name))
        queues.pending = [w for w in pending if pending_in_pool(queues.pool, w)]
    return list(by_pool.values())
