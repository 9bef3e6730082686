"""Per-pool quotas of departments and projects."""

from __future__ import annotations

from django.db import models

from scheduler_core.models.org import Department, Project
from scheduler_core.models.queue_owned import QueueOwned, owner_constraints, owner_field


class Quota(QueueOwned):
    """A department's or a project's deserved resources in one pool, and optional hard limits.

    Deserved quota is guaranteed (others' over-quota work is reclaimed to give it back);
    a limit caps what the queue may hold at all, over-quota included.
    """

    pool = models.ForeignKey(
        "scheduler_core.NodePool", on_delete=models.CASCADE, related_name="quotas"
    )
    department = owner_field(Department, related_name="quotas")
    project = owner_field(Project, related_name="quotas")
    gpus = models.FloatField(default=0)
    cpu = models.FloatField(default=0)
    memory = models.FloatField(default=0)
    limit_gpus = models.FloatField(null=True, blank=True)
    limit_cpu = models.FloatField(null=True, blank=True)
    limit_memory = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool__name", "department__name", "project__name"]
        constraints = [
            *owner_constraints(
                exactly_one="quota_exactly_one_owner",
                one_per_pool=("unique_department_pool_quota", "unique_project_pool_quota"),
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
