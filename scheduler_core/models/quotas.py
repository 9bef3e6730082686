"""Per-pool quotas of departments and projects."""

from __future__ import annotations

from django.db import models


class QuotaQuerySet(models.QuerySet):
    def visible_to(self, user) -> QuotaQuerySet:
        """Quotas of the departments and projects `user` may see."""
        from scheduler_core.models import Department, Project

        projects = Project.objects.visible_to(user).values("pk")
        departments = Department.objects.visible_to(user).values("pk")
        return self.filter(models.Q(project__in=projects) | models.Q(department__in=departments))


class Quota(models.Model):
    """A department's or a project's deserved resources in one pool, and optional hard limits.

    Deserved quota is guaranteed (others' over-quota work is reclaimed to give it back);
    a limit caps what the queue may hold at all, over-quota included. Exactly one of
    department/project is set.
    """

    pool = models.ForeignKey(
        "scheduler_core.NodePool", on_delete=models.CASCADE, related_name="quotas"
    )
    department = models.ForeignKey(
        "scheduler_core.Department",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="quotas",
    )
    project = models.ForeignKey(
        "scheduler_core.Project",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="quotas",
    )
    gpus = models.FloatField(default=0)
    cpu = models.FloatField(default=0)
    memory = models.FloatField(default=0)
    limit_gpus = models.FloatField(null=True, blank=True)
    limit_cpu = models.FloatField(null=True, blank=True)
    limit_memory = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = QuotaQuerySet.as_manager()

    class Meta:
        ordering = ["pool__name", "department__name", "project__name"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(department__isnull=False, project__isnull=True)
                    | models.Q(department__isnull=True, project__isnull=False)
                ),
                name="quota_exactly_one_owner",
            ),
            models.UniqueConstraint(
                fields=["department", "pool"],
                condition=models.Q(department__isnull=False),
                name="unique_department_pool_quota",
            ),
            models.UniqueConstraint(
                fields=["project", "pool"],
                condition=models.Q(project__isnull=False),
                name="unique_project_pool_quota",
            ),
            models.CheckConstraint(
                condition=models.Q(gpus__gte=0, cpu__gte=0, memory__gte=0),
                name="quota_deserved_gte_0",
            ),
            models.CheckConstraint(
                condition=(
                    (models.Q(limit_gpus__isnull=True) | models.Q(limit_gpus__gte=models.F("gpus")))
                    & (models.Q(limit_cpu__isnull=True) | models.Q(limit_cpu__gte=models.F("cpu")))
                    & (
                        models.Q(limit_memory__isnull=True)
                        | models.Q(limit_memory__gte=models.F("memory"))
                    )
                ),
                name="quota_limit_gte_deserved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.owner} in {self.pool}: {self.gpus:g} GPUs"

    @property
    def owner(self):
        """The department or project this quota belongs to."""
        return self.project or self.department
