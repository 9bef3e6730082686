"""Workloads, their candidate pools, and the pods placed on nodes."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from scheduler_core import access
from scheduler_core.choices import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    WorkloadKind,
    WorkloadStatus,
)
from scheduler_core.models.versioned import VersionedModel


class WorkloadQuerySet(models.QuerySet):
    def visible_to(self, user) -> WorkloadQuerySet:
        """Workloads of the projects `user` may see (the shared access rule)."""
        from scheduler_core.models.org import Project

        return self.filter(project__in=Project.objects.filter(access.project_q(user)).values("pk"))

    def visible_to_by_ids(self, user) -> WorkloadQuerySet:
        """The same workloads as `visible_to`, filtered by the visible projects' ids, read
        first in one short query (access.visible_project_ids). For a query that runs more
        than once, as a full list page's count and rows do: the rule's subquery over memberships was
        built by Django and planned by PostgreSQL in each of them, where an array of ids is
        one parameter of a statement planned once (the list at 20 clients,
        `benchmarks.api_load` on PostgreSQL: 161-190 requests/s with the subquery, 178-233
        with the ids)."""
        ids = access.visible_project_ids(user)
        if ids is None:  # a system admin sees every project
            return self.all()
        return self.filter(project_id__any_of=ids)

    def active(self) -> WorkloadQuerySet:
        return self.filter(status__in=ACTIVE_STATES)

    def pending(self) -> WorkloadQuerySet:
        return self.filter(status=WorkloadStatus.PENDING)

    def running(self) -> WorkloadQuerySet:
        return self.filter(status=WorkloadStatus.RUNNING)


class Workload(VersionedModel):
    """A job a researcher submits to a project: one or more pods, each asking for resources.

    A gang: it starts only when `min_pods` pods fit together; between `min_pods` and `pods`
    it is elastic. `groups` (optional) makes it a multi-level gang of pod groups, each a
    dict {name, pods, min_pods, gpus, cpu, memory}; then the flat per-pod fields describe
    nothing. `spec` carries what the runtime needs (image, command, env, `duration` in
    seconds for simulated runs, `checkpoint_every`). `version` is bumped on every change a
    user makes, so a scheduling cycle never overwrites a change made while it ran.
    """

    # Every change of status rewrites each index of the row, so there is no index that
    # another one covers: (project, name) below serves lookups by project and by name.
    project = models.ForeignKey(
        "scheduler_core.Project", on_delete=models.PROTECT, related_name="workloads",
        db_index=False,
    )  # fmt: skip
    name = models.SlugField(max_length=100, db_index=False)
    kind = models.CharField(
        max_length=16, choices=WorkloadKind.choices, default=WorkloadKind.TRAINING
    )
    priority = models.IntegerField(default=50)
    preemptible = models.BooleanField(default=True)
    pods = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    min_pods = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    gpus = models.FloatField(default=0, help_text="Per pod; fractions share a device.")
    cpu = models.FloatField(default=0, help_text="Cores per pod.")
    memory = models.FloatField(default=0, help_text="GiB per pod.")
    groups = models.JSONField(default=list, blank=True)
    candidate_pools = models.ManyToManyField(
        "scheduler_core.NodePool", through="WorkloadCandidatePool", related_name="+", blank=True
    )
    node_selector = models.JSONField(default=dict, blank=True)
    weight = models.FloatField(default=1.0)
    backoff_limit = models.PositiveIntegerField(null=True, blank=True)
    restarts = models.PositiveIntegerField(default=0)
    preemptions = models.PositiveIntegerField(
        default=0,
        help_text="Times reclaim or priority preemption evicted it (a pool's "
        "max_preemptions_per_workload protects it from then on).",
    )
    quick_evictions = models.PositiveIntegerField(
        default=0,
        help_text="Evictions in a row, each within an hour of its start: a pool that holds "
        "preemption loops holds it after its preemption_loop_evictions.",
    )
    spec = models.JSONField(default=dict, blank=True)

    status = models.CharField(
        max_length=16, choices=WorkloadStatus.choices, default=WorkloadStatus.PENDING
    )
    pending_reason = models.TextField(blank=True)
    pending_reason_kind = models.CharField(
        max_length=32,
        blank=True,
        help_text="Why it waits, for filtering: quota, limit, capacity, gang, fairshare, ...",
    )
    queue_position = models.PositiveIntegerField(null=True, blank=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="workloads",
    )
    submitted_at = models.DateTimeField(db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pending_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it last went back to the queue (a preemption or a failed run); "
        "empty: waiting since it was submitted.",
    )
    room_wait_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its queue's rules (fair share, quota, limit, priority) last stopped "
        "keeping it waiting, so that only room could start it; a pool that weighs lost work "
        "counts its wait for room from then, or from later once part of that wait has paid "
        "for a reclaim. Empty: they never did since it was queued.",
    )
    retry_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="After a failed run: not started again before this (back-off).",
    )
    progress_seconds = models.FloatField(
        default=0, help_text="Simulated runtime saved at the last checkpoint."
    )
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    objects = WorkloadQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_workload_name"),
            models.CheckConstraint(
                condition=models.Q(min_pods__lte=models.F("pods")),
                name="workload_min_pods_lte_pods",
            ),
            models.CheckConstraint(
                condition=models.Q(gpus__gte=0, cpu__gte=0, memory__gte=0),
                name="workload_resources_gte_0",
            ),
            models.CheckConstraint(condition=models.Q(weight__gt=0), name="workload_weight_gt_0"),
        ]
        indexes = [models.Index(fields=["status", "project"])]

    def __str__(self) -> str:
        return f"{self.project}/{self.name}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATES

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATES

    @property
    def pod_groups(self) -> list[dict]:
        """The pod groups, a single one named "main" when `groups` is empty."""
        if self.groups:
            return self.groups
        return [
            {
                "name": "main",
                "pods": self.pods,
                "min_pods": self.min_pods,
                "gpus": self.gpus,
                "cpu": self.cpu,
                "memory": self.memory,
            }
        ]

    @property
    def total_gpus(self) -> float:
        """GPUs asked for with every pod placed."""
        return total_gpus_of(self.groups, self.pods, self.gpus)

    @property
    def duration(self) -> float | None:
        value = (self.spec or {}).get("duration")
        return float(value) if value is not None else None


def total_gpus_of(groups: list[dict], pods: int, gpus: float) -> float:
    """GPUs a workload asks for with every pod placed: of its pod groups, or of its single
    group (`pods` pods of `gpus` each) when `groups` is empty."""
    if groups:
        return sum(g["pods"] * g.get("gpus", 0) for g in groups)
    return pods * gpus


class WorkloadCandidatePool(models.Model):
    """One pool a workload may run in; lower `preference` is tried first."""

    workload = models.ForeignKey(
        Workload, on_delete=models.CASCADE, related_name="pool_choices",
        db_index=False,  # the unique (workload, pool) below serves it
    )  # fmt: skip
    pool = models.ForeignKey("scheduler_core.NodePool", on_delete=models.CASCADE, related_name="+")
    preference = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["preference"]
        constraints = [
            models.UniqueConstraint(fields=["workload", "pool"], name="unique_workload_pool")
        ]

    def __str__(self) -> str:
        return f"{self.workload_id} may run in {self.pool_id} (#{self.preference})"


class Allocation(models.Model):
    """One running pod of a workload: which node, which GPU devices, what fraction of each."""

    workload = models.ForeignKey(
        Workload, on_delete=models.CASCADE, related_name="allocations",
        db_index=False,  # the unique (workload, group, pod_index) below serves it
    )  # fmt: skip
    group = models.CharField(max_length=63, default="main")
    pod_index = models.PositiveIntegerField()
    node = models.ForeignKey(
        "scheduler_core.Node", on_delete=models.PROTECT, related_name="allocations"
    )
    gpu_devices = models.JSONField(default=list, blank=True)
    gpu_fraction = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workload_id", "group", "pod_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "group", "pod_index"], name="unique_pod_allocation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.workload} {self.group}[{self.pod_index}] on {self.node}"
