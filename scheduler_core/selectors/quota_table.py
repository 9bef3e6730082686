"""The quota editor's table: per pool, each department and its projects with their quota,
limit, rank, over-quota weight and what the last cycle saw (fairshare, allocated)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core import access
from scheduler_core.models import Department, NodePool, Project, QueueState, Quota
from scheduler_core.models.queue_owner import QueueOwner


@dataclass
class QuotaRow:
    """One department or project in one pool."""

    owner: QueueOwner
    pool: NodePool
    gpus: float
    limit_gpus: float | None
    fairshare_gpus: float
    allocated_gpus: float
    editable: bool

    @property
    def kind(self) -> str:
        return self.owner.kind

    @property
    def key(self) -> str:
        return f"{self.kind}-{self.owner.pk}-{self.pool.pk}"


@dataclass
class DepartmentBlock:
    """A department row and its project rows."""

    row: QuotaRow
    projects: list[QuotaRow] = field(default_factory=list)

    @property
    def projects_gpus(self) -> float:
        return sum(p.gpus for p in self.projects)


@dataclass
class PoolQuotaTable:
    pool: NodePool
    gpus_total: int
    departments: list[DepartmentBlock] = field(default_factory=list)

    @property
    def departments_gpus(self) -> float:
        return sum(d.row.gpus for d in self.departments)


def _row(
    owner: QueueOwner,
    pool: NodePool,
    quota: Quota | None,
    state: QueueState | None,
    *,
    system_admin: bool,
) -> QuotaRow:
    return QuotaRow(
        owner=owner,
        pool=pool,
        gpus=quota.gpus if quota else 0.0,
        limit_gpus=quota.limit_gpus if quota else None,
        fairshare_gpus=state.fairshare_gpus if state else 0.0,
        allocated_gpus=state.allocated_gpus if state else 0.0,
        # a department's quota is set by system admins, a project's by its department's
        editable=system_admin or owner.kind == "project",
    )


def quota_row(*, user, owner: QueueOwner, pool: NodePool) -> QuotaRow:
    """One row of the table, for a user who administers `owner` (2 queries)."""
    return _row(
        owner,
        pool,
        Quota.objects.for_owner(owner).filter(pool=pool).first(),
        QueueState.objects.for_owner(owner).filter(pool=pool).first(),
        system_admin=access.is_system_admin(user),
    )


def quota_table(*, user, gpus_by_pool: dict[int, int] | None = None) -> list[PoolQuotaTable]:
    """Quotas `user` administers: everything for system admins, their departments for
    department admins, nothing for others (5 queries)."""
    managed = access.managed_department_ids(user)
    if managed is not None and not managed:
        return []
    shown = Department.objects.order_by("-rank", "name")
    if managed is not None:
        shown = shown.filter(pk__in=managed)
    departments = list(shown)
    projects = list(Project.objects.filter(department__in=departments).order_by("-rank", "name"))
    pools = list(NodePool.objects.order_by("name"))
    quotas = {(q.pool_id, *q.owner_key): q for q in Quota.objects.filter(pool__in=pools)}
    states = {(s.pool_id, *s.owner_key): s for s in QueueState.objects.filter(pool__in=pools)}
    system_admin = access.is_system_admin(user)

    def row(owner: QueueOwner, pool: NodePool) -> QuotaRow:
        key = (pool.pk, *owner.owner_key)
        return _row(owner, pool, quotas.get(key), states.get(key), system_admin=system_admin)

    tables = []
    for pool in pools:
        table = PoolQuotaTable(pool=pool, gpus_total=(gpus_by_pool or {}).get(pool.pk, 0))
        for dept in departments:
            block = DepartmentBlock(row=row(dept, pool))
            block.projects = [row(p, pool) for p in projects if p.department_id == dept.pk]
            table.departments.append(block)
        tables.append(table)
    return tables
