"""What the last scheduling cycles worked out: queue shares and cycle records."""

from __future__ import annotations

from django.db import models

from scheduler_core.models.queue_owned import QueueOwned, owner_constraints


class QueueState(QueueOwned):
    """A department's or project's queue in one pool as the last cycle saw it.

    Deserved and limit mirror the quota; fairshare is what the engine worked out this cycle;
    allocated is what runs; requested is allocated plus pending demand.
    """

    pool = models.ForeignKey("scheduler_core.NodePool", on_delete=models.CASCADE, related_name="+")
    deserved_gpus = models.FloatField(default=0)
    limit_gpus = models.FloatField(null=True, blank=True)
    fairshare_gpus = models.FloatField(default=0)
    allocated_gpus = models.FloatField(default=0)
    requested_gpus = models.FloatField(default=0)
    fairshare_cpu = models.FloatField(default=0)
    allocated_cpu = models.FloatField(default=0)
    fairshare_memory = models.FloatField(default=0)
    allocated_memory = models.FloatField(default=0)
    pending_count = models.PositiveIntegerField(default=0)
    running_count = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool__name", "department__name", "project__name"]
        constraints = owner_constraints(
            exactly_one="queue_state_exactly_one_owner",
            one_per_pool=("unique_department_queue_state", "unique_project_queue_state"),
        )

    def __str__(self) -> str:
        return f"queue {self.project_id or self.department_id} in pool {self.pool_id}"


class CycleRecord(models.Model):
    """One scheduling cycle that ran: when, how long, how many decisions it applied."""

    started_at = models.DateTimeField(db_index=True)
    duration_seconds = models.FloatField()
    decisions = models.PositiveIntegerField(default=0)
    dropped_decisions = models.PositiveIntegerField(
        default=0, help_text="Decisions not applied because what they saw had changed."
    )
    pending = models.PositiveIntegerField(default=0)
    running = models.PositiveIntegerField(default=0)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"cycle at {self.started_at:%H:%M:%S} ({self.duration_seconds:.3f} s)"
