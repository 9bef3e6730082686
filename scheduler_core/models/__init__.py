"""Fairway's domain model. Each module holds one area; everything is re-exported here."""

from scheduler_core.models.accounts import ApiToken, IdempotencyKey
from scheduler_core.models.agents import (
    GpuSample,
    GpuUsageRollup,
    JoinToken,
    LogChunk,
    NodeCredential,
    PodRun,
    RunUsageSample,
)
from scheduler_core.models.cluster import Node, NodePool
from scheduler_core.models.events import SchedulingEvent, UsageSample
from scheduler_core.models.org import Department, DepartmentMembership, Project, ProjectMembership
from scheduler_core.models.quotas import Quota
from scheduler_core.models.scheduling import CycleRecord, QueueState
from scheduler_core.models.simulations import Simulation
from scheduler_core.models.workloads import Allocation, Workload, WorkloadCandidatePool

__all__ = [
    "Allocation",
    "ApiToken",
    "CycleRecord",
    "Department",
    "DepartmentMembership",
    "GpuSample",
    "GpuUsageRollup",
    "IdempotencyKey",
    "JoinToken",
    "LogChunk",
    "Node",
    "NodeCredential",
    "NodePool",
    "PodRun",
    "Project",
    "ProjectMembership",
    "QueueState",
    "Quota",
    "RunUsageSample",
    "SchedulingEvent",
    "Simulation",
    "UsageSample",
    "Workload",
    "WorkloadCandidatePool",
]
