"""Rows that belong to one queue owner (a department or a project): quotas, queue states
and usage samples. Each names its owner the same way: `owner`, `for_owner(owner)`."""

from __future__ import annotations

from typing import Self

from django.db import models
from django.db.models import Q

from scheduler_core.models.org import Department, Project
from scheduler_core.models.queue_owner import QueueOwner


class QueueOwnedQuerySet(models.QuerySet["QueueOwned"]):
    def for_owner(self, owner: QueueOwner) -> Self:
        """The rows `owner` owns."""
        return self.filter(**{owner.kind: owner})

    def visible_to(self, user) -> Self:
        """Rows of the departments and projects `user` may see."""
        projects = Project.objects.visible_to(user).values("pk")
        departments = Department.objects.visible_to(user).values("pk")
        return self.filter(Q(project__in=projects) | Q(department__in=departments))


def owner_field(model: type[QueueOwner], related_name: str = "+") -> models.ForeignKey:
    """One of the two either-or references to the owner."""
    return models.ForeignKey(
        model, on_delete=models.CASCADE, null=True, blank=True, related_name=related_name
    )


def owner_constraints(
    *, exactly_one: str, one_per_pool: tuple[str, str] | None = None
) -> list[models.BaseConstraint]:
    """Exactly one owner per row and, with `one_per_pool` (the department's and the
    project's constraint names), one row per owner and pool."""
    constraints: list[models.BaseConstraint] = [
        models.CheckConstraint(
            condition=(
                Q(department__isnull=False, project__isnull=True)
                | Q(department__isnull=True, project__isnull=False)
            ),
            name=exactly_one,
        )
    ]
    if one_per_pool:
        constraints += [
            models.UniqueConstraint(
                fields=[kind, "pool"], condition=Q(**{f"{kind}__isnull": False}), name=name
            )
            for kind, name in zip(("department", "project"), one_per_pool, strict=True)
        ]
    return constraints


class QueueOwned(models.Model):
    """A row of exactly one department or project (one of the two references is set)."""

    department = owner_field(Department)
    project = owner_field(Project)

    objects = QueueOwnedQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def owner(self) -> QueueOwner:
        """The department or project the row belongs to."""
        return self.project or self.department

    @owner.setter
    def owner(self, owner: QueueOwner) -> None:
        self.department, self.project = (None, owner) if owner.kind == "project" else (owner, None)

    @property
    def owner_kind(self) -> str:
        """The owner's kind ("department" or "project"), without loading it."""
        return "project" if self.project_id else "department"

    @property
    def owner_key(self) -> tuple[str, int | None]:
        """(kind, id) of the owner, without loading it: the owner's own `owner_key`."""
        return (self.owner_kind, self.project_id or self.department_id)
