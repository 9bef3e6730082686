"""What happened: scheduling events, and GPU usage history for time-based fairshare."""

from __future__ import annotations

from django.db import models

from scheduler_core import access
from scheduler_core.choices import EventType
from scheduler_core.models.queue_owned import QueueOwned, owner_constraints


class SchedulingEventQuerySet(models.QuerySet):
    def visible_to(self, user) -> SchedulingEventQuerySet:
        """Events of visible projects, of visible departments (a department's own quota),
        and cluster-wide events (neither) for signed-in users."""
        if not access.is_authenticated(user):
            return self.none()
        if access.is_system_admin(user):
            return self
        return self.filter(access.event_q(user))


class SchedulingEvent(models.Model):
    """A change a user would care about: submitted, allocated, preempted (and why), moved, ...

    Events are a log that busy cycles append to by the thousand. Their references are
    kept by Django (on_delete below) and by the writers, which hold the rows they write
    about, not by database constraints: those would check every reference of every row
    at commit, which cost a busy cycle as much as writing the rows did. For the same
    reason no index repeats another one's leading column.
    """

    created_at = models.DateTimeField(db_index=True)
    type = models.CharField(max_length=32, choices=EventType.choices)
    workload = models.ForeignKey(
        "scheduler_core.Workload",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="events",
        db_constraint=False,
    )
    project = models.ForeignKey(
        "scheduler_core.Project",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        db_index=False,  # (project, -created_at) below serves it
    )
    department = models.ForeignKey(
        "scheduler_core.Department",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
        db_index=False,  # read only among the few events without a project
        help_text="The department of a department-level event (its own quota); "
        "only those who may see the department see it.",
    )
    pool = models.ForeignKey(
        "scheduler_core.NodePool",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
    )
    node = models.ForeignKey(
        "scheduler_core.Node",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
    )
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    objects = SchedulingEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-created_at"]),
            # equality only: no second, pattern-matching index as db_index would add
            models.Index(fields=["type"], name="schedulingevent_type_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%H:%M:%S} {self.type} {self.workload or self.node or ''}"


class UsageSample(QueueOwned):
    """GPU-seconds a department or project used in a pool over one interval."""

    pool = models.ForeignKey("scheduler_core.NodePool", on_delete=models.CASCADE, related_name="+")
    interval_start = models.DateTimeField(db_index=True)
    interval_end = models.DateTimeField()
    gpu_seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["-interval_start"]
        constraints = [
            *owner_constraints(exactly_one="usage_exactly_one_owner"),
            models.CheckConstraint(
                condition=models.Q(interval_end__gt=models.F("interval_start")),
                name="usage_interval_positive",
            ),
            models.CheckConstraint(condition=models.Q(gpu_seconds__gte=0), name="usage_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id or self.department_id} {self.gpu_seconds:g} GPU-s"
