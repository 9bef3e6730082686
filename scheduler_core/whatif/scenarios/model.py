"""A loaded scenario: the initial cluster, the timeline of steps and their expectations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler_core.engine.snapshot import NodeSpec, PoolConfig, QueueSpec, WorkloadSpec


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a step: `type` (submit, finish, fail, delete, set_priority,
    set_quota, set_weight, node_down, node_up) and its arguments."""

    type: str
    target: str = ""
    workload: WorkloadSpec | None = None
    duration: float | None = None
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Expect:
    """What must hold once scheduling reaches a fixed point at a step."""

    running: tuple[str, ...] | None = None
    pending: tuple[str, ...] | None = None
    completed: tuple[str, ...] | None = None
    failed: tuple[str, ...] | None = None
    only: bool = False
    pods: dict[str, int] | None = None
    preempted: tuple[str, ...] | None = None
    moved: tuple[str, ...] | None = None
    allocated: dict[str, dict[str, dict[str, float]]] | None = None
    fairshare: dict[str, dict[str, dict[str, float]]] | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """A point in simulated time: events applied, then scheduling, then `expect`."""

    index: int
    at: float
    events: tuple[Event, ...] = ()
    expect: Expect | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A parsed, validated scenario (see /work/shared/scenarios/FORMAT.md)."""

    name: str
    description: str
    source: str
    pools: tuple[PoolConfig, ...]
    nodes: tuple[NodeSpec, ...]
    queues: tuple[QueueSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    durations: dict[str, float | None]
    steps: tuple[Step, ...]
    projects: tuple[str, ...] = ()
    departments: tuple[str, ...] = ()
