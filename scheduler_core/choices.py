"""Choice classes with their state groups, shared by models, services, API and console."""

from django.db import models


class Policy(models.TextChoices):
    """How a node pool divides its GPUs."""

    QUOTA = "quota", "Quota / fairshare (Run:ai)"
    FAIRSHARE = "fairshare", "Fair share (Determined)"
    PRIORITY = "priority", "Priority (Determined)"


class Backend(models.TextChoices):
    """What runs a pool's pods: each backend is served by the executor registered for it
    in scheduler_core.runtime.registry (docs/executors.md)."""

    SIMULATED = "simulated", "Simulated (runs end after their duration)"
    AGENT = "agent", "Node agents (real processes)"
    SLURM = "slurm", "Slurm (a partition of a Slurm cluster)"


DEFAULT_BACKEND = Backend.SIMULATED


class Placement(models.TextChoices):
    """Where pods go inside a pool."""

    BINPACK = "binpack", "Bin-pack"
    SPREAD = "spread", "Spread"


class FairshareMode(models.TextChoices):
    """Whether over-quota shares look at usage history."""

    POINT_IN_TIME = "point_in_time", "Point in time"
    TIME_BASED = "time_based", "Time based"


class NodeState(models.TextChoices):
    """A node's schedulability. Only ready nodes take new pods."""

    READY = "ready", "Ready"
    CORDONED = "cordoned", "Cordoned"
    UNREACHABLE = "unreachable", "Unreachable"
    DOWN = "down", "Down"


class WorkloadKind(models.TextChoices):
    """What a workload is for; decides default priority and preemptibility
    (scheduler_core.schemas.kinds.kind_defaults)."""

    TRAINING = "training", "Training"
    INTERACTIVE = "interactive", "Interactive"
    INFERENCE = "inference", "Inference"
    CPU = "cpu", "CPU only"


class WorkloadStatus(models.TextChoices):
    """A workload's lifecycle state."""

    PENDING = "pending", "Pending"
    STARTING = "starting", "Starting"
    RUNNING = "running", "Running"
    SUSPENDED = "suspended", "Suspended"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_STATES = frozenset({WorkloadStatus.PENDING, WorkloadStatus.STARTING, WorkloadStatus.RUNNING})
# Holding GPUs: placed by the scheduler, whether or not every process has started yet.
PLACED_STATES = frozenset({WorkloadStatus.STARTING, WorkloadStatus.RUNNING})
SCHEDULABLE_STATES = ACTIVE_STATES
TERMINAL_STATES = frozenset(
    {WorkloadStatus.COMPLETED, WorkloadStatus.FAILED, WorkloadStatus.CANCELLED}
)


class EventType(models.TextChoices):
    """What happened, as recorded in SchedulingEvent and pushed to browsers."""

    SUBMITTED = "submitted", "Submitted"
    ALLOCATED = "allocated", "Allocated"
    RUNNING = "running", "Running"
    PREEMPTED = "preempted", "Preempted"
    RUN_FAILED = "run_failed", "Run failed"
    MOVED = "moved", "Moved"
    SHRUNK = "shrunk", "Shrunk"
    EXPANDED = "expanded", "Expanded"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    DELETED = "deleted", "Cancelled"
    SUSPENDED = "suspended", "Suspended"
    RESUMED = "resumed", "Resumed"
    PRIORITY_CHANGED = "priority_changed", "Priority changed"
    PENDING_REASON = "pending_reason", "Pending reason changed"
    NODE_STATE = "node_state", "Node state changed"
    QUOTA_CHANGED = "quota_changed", "Quota changed"
    RANK_WEIGHT_CHANGED = "rank_weight_changed", "Rank or weight changed"
    PREEMPTION_LOOP = "preemption_loop", "Preemption loop"


class ProjectRole(models.TextChoices):
    """A user's role in a project."""

    RESEARCHER = "researcher", "Researcher"
    VIEWER = "viewer", "Viewer"


class DepartmentRole(models.TextChoices):
    """A user's role in a department."""

    ADMIN = "admin", "Department admin"
    VIEWER = "viewer", "Viewer"


class SimulationStatus(models.TextChoices):
    """Lifecycle of a what-if run."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class SimulationSource(models.TextChoices):
    """Where a what-if run's cluster comes from."""

    SCENARIO = "scenario", "Scenario file"
    LIVE = "live", "Copy of the live cluster"
    TRACE = "trace", "Job trace"
