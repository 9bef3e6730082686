"""Real execution (docs/agent.md, docs/executors.md): join tokens and node credentials of
agents; the runs executors start (one per process start, with its epoch: the neutral run
state every executor shares), their logs and usage samples."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class JoinToken(models.Model):
    """Lets an agent register a node in `pool`; shown once, only its hash is stored."""

    pool = models.ForeignKey(
        "scheduler_core.NodePool", on_delete=models.CASCADE, related_name="join_tokens"
    )
    description = models.CharField(max_length=255, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise it.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    single_use = models.BooleanField(
        default=False, help_text="Used up by the first node it registers."
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"join token {self.prefix}… for {self.pool}"


class NodeCredential(models.Model):
    """The secret an agent presents for its node; re-registering replaces it."""

    node = models.OneToOneField(
        "scheduler_core.Node", on_delete=models.CASCADE, related_name="credential"
    )
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"credential {self.prefix}… of {self.node}"


class PodRunState(models.TextChoices):
    """Where one process start stands, as its executor reported it."""

    STARTING = "starting", "Starting"
    RUNNING = "running", "Running"
    STOPPING = "stopping", "Stopping"
    EXITED = "exited", "Exited"
    START_FAILED = "start_failed", "Start failed"
    LOST = "lost", "Lost"


LIVE_RUN_STATES = frozenset({PodRunState.STARTING, PodRunState.RUNNING, PodRunState.STOPPING})


class PodRun(models.Model):
    """One start of one pod's process on a node, by its pool's executor (an agent, Slurm).
    `allocation` is the scheduler's claim it serves; it is cleared when the pod is
    evicted, moved, shrunk or ends, and a live run without one is stopped. `epoch` is the
    node's start counter: a start message is obeyed only once. `external_id` is the
    executor's own id of the run (a Slurm job id, a pod UID), when it has one. `ports`:
    where the ports its workload declares listen (host and port each), as its executor
    reported them; Fairway's proxy reaches the pod there."""

    workload = models.ForeignKey(
        "scheduler_core.Workload", on_delete=models.CASCADE, related_name="pod_runs"
    )
    allocation = models.ForeignKey(
        "scheduler_core.Allocation", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="runs",
    )  # fmt: skip
    node = models.ForeignKey(
        "scheduler_core.Node", on_delete=models.CASCADE, related_name="pod_runs"
    )
    group = models.CharField(max_length=63, default="main")
    pod_index = models.PositiveIntegerField()
    epoch = models.PositiveBigIntegerField()
    gpu_devices = models.JSONField(default=list, blank=True)
    gpu_fraction = models.FloatField(default=1.0)
    state = models.CharField(
        max_length=16, choices=PodRunState.choices, default=PodRunState.STARTING
    )
    stop_reason = models.CharField(max_length=16, blank=True)
    stop_sent_at = models.DateTimeField(null=True, blank=True)
    start_sent_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When its start was last handed to the executor (sent again, with a new "
        "epoch, when nothing was heard of it for RUN_START_RESEND_AFTER seconds).",
    )  # fmt: skip
    exit_code = models.IntegerField(null=True, blank=True)
    signal = models.CharField(max_length=16, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    log_size = models.PositiveBigIntegerField(default=0, help_text="Bytes of log stored.")
    external_id = models.CharField(
        max_length=128, blank=True, help_text="The executor's own id of the run (a Slurm job id)."
    )
    ports = models.JSONField(
        default=list, blank=True,
        help_text='Where its declared ports listen: [{"name", "host", "port"}], as reported.',
    )  # fmt: skip

    # Its place among its pod's runs (1: the first), where a selector numbered them
    # (selectors.agents.pod_runs_of); not stored.
    number: int | None = None

    class Meta:
        ordering = ["workload_id", "group", "pod_index", "-epoch"]
        constraints = [
            models.UniqueConstraint(fields=["node", "epoch"], name="unique_run_epoch_per_node")
        ]
        indexes = [models.Index(fields=["node", "state"])]

    def __str__(self) -> str:
        return (
            f"run {self.pk} of {self.workload_id} {self.group}-{self.pod_index} on {self.node_id}"
        )

    @property
    def pod(self) -> str:
        return f"{self.group}-{self.pod_index}"


class LogChunk(models.Model):
    """Bytes `offset`..`offset + len(data)` of a run's output (stdout and stderr)."""

    run = models.ForeignKey(PodRun, on_delete=models.CASCADE, related_name="log_chunks")
    offset = models.PositiveBigIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["run_id", "offset"]
        constraints = [
            models.UniqueConstraint(fields=["run", "offset"], name="unique_log_chunk_offset")
        ]

    def __str__(self) -> str:
        return f"log of run {self.run_id} from byte {self.offset}"


class GpuSample(models.Model):
    """One GPU's utilisation and memory as its agent measured them."""

    node = models.ForeignKey("scheduler_core.Node", on_delete=models.CASCADE, related_name="+")
    index = models.PositiveIntegerField()
    at = models.DateTimeField()
    utilization = models.FloatField(help_text="Percent busy.")
    memory_used_mib = models.FloatField()
    memory_total_mib = models.FloatField()

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["node", "index", "-at"]), models.Index(fields=["at"])]

    def __str__(self) -> str:
        return f"GPU {self.index} of node {self.node_id} at {self.at}: {self.utilization} %"


class RunUsageSample(models.Model):
    """One run's CPU and memory use as its agent measured them."""

    run = models.ForeignKey(PodRun, on_delete=models.CASCADE, related_name="usage_samples")
    at = models.DateTimeField()
    cpu_percent = models.FloatField()
    rss_mib = models.FloatField()

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["run", "-at"])]

    def __str__(self) -> str:
        return f"run {self.run_id} at {self.at}: {self.cpu_percent} % CPU"


class GpuUsageQuerySet(models.QuerySet):
    def visible_to(self, user) -> GpuUsageQuerySet:
        """Rows of the projects `user` may see, and the unheld part of every device (nodes
        are visible to everyone signed in): the shared access rule."""
        from scheduler_core import access
        from scheduler_core.models.org import Project

        if not access.is_authenticated(user):
            return self.none()
        visible = Project.objects.filter(access.project_q(user)).values("pk")
        return self.filter(models.Q(project__in=visible) | models.Q(workload__isnull=True))


class GpuUsageRollup(models.Model):
    """A GPU's use over one bucket (a minute or an hour), for one workload that held it (or
    for nobody: the part of the device no run held). Built from GpuSample by
    services.gpu_usage: each sample is shared among the runs holding the device then, by
    their GPU fractions, so every figure adds up across rows. `held_gpus` is the GPUs held
    on average over the bucket, `used_gpus` the same weighted by the device's utilisation
    (a whole GPU 30 % busy for the whole bucket: held 1, used 0.3), the memory figures the
    mean MiB of the held share."""

    resolution = models.PositiveIntegerField(help_text="Seconds the bucket spans (60, 3600).")
    start = models.DateTimeField()
    node = models.ForeignKey("scheduler_core.Node", on_delete=models.CASCADE, related_name="+")
    pool = models.ForeignKey("scheduler_core.NodePool", on_delete=models.CASCADE, related_name="+")
    index = models.PositiveIntegerField(help_text="The GPU's index on its node.")
    workload = models.ForeignKey(
        "scheduler_core.Workload", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    project = models.ForeignKey(
        "scheduler_core.Project", on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip
    samples = models.PositiveIntegerField()
    held_gpus = models.FloatField()
    used_gpus = models.FloatField()
    memory_used_mib = models.FloatField()
    memory_total_mib = models.FloatField()

    objects = GpuUsageQuerySet.as_manager()

    class Meta:
        ordering = ["resolution", "start", "node_id", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["resolution", "start", "node", "index", "workload"],
                name="unique_gpu_usage_bucket",
            )
        ]
        indexes = [
            models.Index(fields=["resolution", "start"]),
            models.Index(fields=["resolution", "pool", "start"]),
            models.Index(fields=["resolution", "project", "start"]),
            models.Index(fields=["resolution", "node", "start"]),
            models.Index(fields=["resolution", "workload", "start"]),
        ]

    def __str__(self) -> str:
        return f"GPU {self.index} of node {self.node_id}, {self.resolution} s from {self.start}"
