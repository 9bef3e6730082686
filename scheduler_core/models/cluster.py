"""Node pools and nodes."""

from __future__ import annotations

from typing import Any

from django.core.validators import MinValueValidator
from django.db import models

from scheduler_core.choices import (
    DEFAULT_BACKEND,
    Backend,
    FairshareMode,
    NodeState,
    Placement,
    Policy,
)
from scheduler_core.engine.profiles import (
    PROFILE_KAI,
    PROFILE_SETTINGS,
    profile_of,
    profile_settings,
)
from scheduler_core.models.versioned import VersionedModel

PROFILE_CUSTOM = "custom"
PROFILE_SETTING_NAMES = tuple(row[0] for row in PROFILE_SETTINGS)


class NodePool(models.Model):
    """A set of nodes scheduled together, with its own policy and scheduling settings.

    Each department and project has one queue per pool (quota rows per pool).
    """

    name = models.SlugField(max_length=63, unique=True)
    description = models.CharField(max_length=255, blank=True)
    policy = models.CharField(max_length=16, choices=Policy.choices, default=Policy.QUOTA)
    placement = models.CharField(
        max_length=16, choices=Placement.choices, default=Placement.BINPACK
    )
    preemption = models.BooleanField(default=True)
    consolidation = models.BooleanField(default=True)
    max_consolidation_evaluations = models.PositiveIntegerField(default=100)
    consolidation_weighs_lost_work = models.BooleanField(
        default=False,
        help_text="Move running pods only while the work a move throws away is no more than "
        "the GPU-time the waiting job has waited.",
    )
    consolidation_within_quota = models.BooleanField(
        default=False,
        help_text="Move running pods for a workload beyond its project's or department's "
        "deserved quota only when they run beyond their own project's quota too and the move "
        "throws away at most 1/30 of the GPU-time the workload has waited.",
    )
    reserve_for_gangs = models.BooleanField(
        default=False,
        help_text="Hold the nodes likeliest to drain for the first workload of a queue that "
        "does not fit for fragmentation; others' pods stay off them until it starts.",
    )
    reclaim_weighs_lost_work = models.BooleanField(
        default=False,
        help_text="Reclaim running work from other queues only while the work it throws away "
        "is no more than the GPU-time the reclaiming queue's workloads have waited.",
    )
    reclaim_lost_work_ratio = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.01)],
        help_text="Where reclaims weigh lost work: the share of its waited GPU-time a queue "
        "may throw away (1: as much as it waited; 0.5: half).",
    )
    max_reclaims_per_cycle = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=100,
        help_text="Reclaims one cycle may make in this pool (the next cycle goes on); "
        "empty = no bound.",
    )
    max_preemptions_per_cycle = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=100,
        help_text="Priority preemptions one cycle may make in this pool; empty = no bound.",
    )
    min_guaranteed_runtime = models.PositiveIntegerField(
        default=0, help_text="Seconds a started preemptible workload is safe from eviction."
    )
    max_preemptions_per_workload = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(1)],
        help_text="A workload reclaimed or preempted this many times is not evicted or moved "
        "again: it runs to its end. Empty = no bound.",
    )
    preemption_loop_evictions = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(1)],
        help_text="A workload evicted this many times in a row, each within an hour of "
        "starting, is held pending for an hour with a reason that says so. Empty: never held.",
    )
    over_quota_weight_from_quota = models.BooleanField(
        default=False, help_text="Use each queue's quota as its over-quota weight."
    )
    fairshare_mode = models.CharField(
        max_length=16, choices=FairshareMode.choices, default=FairshareMode.POINT_IN_TIME
    )
    time_based_window = models.PositiveIntegerField(default=604800)
    time_based_half_life = models.PositiveIntegerField(default=86400)
    time_based_k = models.FloatField(default=1.0, validators=[MinValueValidator(0)])
    backend = models.CharField(
        max_length=16, choices=Backend.choices, default=DEFAULT_BACKEND,
        help_text="What runs this pool's pods: the simulator, node agents, or Slurm.",
    )  # fmt: skip
    backend_settings = models.JSONField(
        default=dict, blank=True,
        help_text="The backend's own settings (a Slurm pool's partition, signal, ...), as "
        "its executor's settings model declares them.",
    )  # fmt: skip
    grace_period = models.PositiveIntegerField(
        default=30, help_text="Seconds between SIGTERM and SIGKILL when a pod is stopped."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(time_based_k__gte=0), name="pool_k_gte_0"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def profile(self) -> str:
        """The policy profile whose every setting the pool holds (engine.profiles), or
        "custom"."""
        settings = {name: getattr(self, name) for name in PROFILE_SETTING_NAMES}
        return profile_of(settings) or PROFILE_CUSTOM

    def profile_changes(self) -> dict[str, tuple[Any, Any]]:
        """What the pool's settings change from KAI's: {setting: (kai's, the pool's)}."""
        kai = profile_settings(PROFILE_KAI)
        return {
            name: (kai[name], getattr(self, name))
            for name in PROFILE_SETTING_NAMES
            if getattr(self, name) != kai[name]
        }


class NodeQuerySet(models.QuerySet):
    def visible_to(self, user) -> NodeQuerySet:
        """Every signed-in user may see the nodes (the GPU map)."""
        from scheduler_core import access

        return self if access.is_authenticated(user) else self.none()

    def schedulable(self) -> NodeQuerySet:
        return self.filter(state=NodeState.READY)


class Node(VersionedModel):
    """A machine with GPUs, CPU cores and memory (GiB) in one pool.

    Only ready nodes take new pods; a cordoned node keeps its pods; a down node loses them.
    """

    pool = models.ForeignKey(NodePool, on_delete=models.PROTECT, related_name="nodes")
    name = models.SlugField(max_length=63, unique=True)
    gpu_count = models.PositiveIntegerField(default=0)
    gpu_model = models.CharField(max_length=64, blank=True)
    cpu = models.FloatField(default=0, validators=[MinValueValidator(0)])
    memory = models.FloatField(default=0, validators=[MinValueValidator(0)], help_text="GiB")
    labels = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.READY)
    last_heartbeat = models.DateTimeField(null=True, blank=True)
    address = models.CharField(
        max_length=255, blank=True, help_text="Where its pods reach each other (agent)."
    )
    devices = models.JSONField(
        default=list, blank=True,
        help_text="GPUs its agent found: [{index, uuid, model, memory_mib}].",
    )  # fmt: skip
    capabilities = models.JSONField(default=dict, blank=True)
    agent_version = models.CharField(max_length=32, blank=True)
    last_epoch = models.PositiveBigIntegerField(
        default=0, help_text="The last run epoch given to its agent."
    )
    version = models.PositiveIntegerField(default=0, help_text="Bumped on every state change.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = NodeQuerySet.as_manager()

    UNVERSIONED_FIELDS = frozenset({"last_heartbeat", "last_epoch", "agent_version"})

    class Meta:
        ordering = ["pool__name", "name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(cpu__gte=0), name="node_cpu_gte_0"),
            models.CheckConstraint(condition=models.Q(memory__gte=0), name="node_memory_gte_0"),
        ]

    def __str__(self) -> str:
        return self.name
