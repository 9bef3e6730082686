"""Scenario files (FORMAT.md v1.1): the shape of every entry. Whether names refer to
things that exist, and the initial placements, are checked when the scenario is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import Field, model_validator

from scheduler_core.engine.snapshot import NODE_STATES
from scheduler_core.schemas.base import (
    MAX_EVENTS_PER_STEP,
    MAX_SCENARIO_NODES,
    MAX_SCENARIO_PODS,
    MAX_SCENARIO_TIME,
    MAX_SCENARIO_WORKLOADS,
    MAX_SECONDS,
    MAX_STEPS,
    Amount,
    Name,
    NodeCPU,
    NodeGPUs,
    NodeMemory,
    Omittable,
    Preemptions,
    Priority,
    QueueWeight,
    Rank,
    ScenarioLabels,
    StrictModel,
    Time,
    Weight,
    check_running_total,
    number,
    one_of,
    rule_error,
    show,
    whole,
)
from scheduler_core.schemas.pools import ScenarioConfig, ScenarioPool
from scheduler_core.schemas.workloads import WorkloadShape

EVENT_TYPES = (
    "submit",
    "finish",
    "fail",
    "delete",
    "set_priority",
    "set_quota",
    "set_weight",
    "node_down",
    "node_up",
)


class Amounts(StrictModel):
    """GPUs, CPU cores and GiB of memory; a resource left out is not stated."""

    gpus: Omittable[Amount] = None
    cpu: Omittable[Amount] = None
    memory: Omittable[Amount] = None


class ScenarioNode(StrictModel):
    """A node, or `count` alike nodes named name-1 .. name-N."""

    name: Name
    count: Omittable[Annotated[int, whole(ge=1, le=MAX_SCENARIO_NODES)]] = None
    pool: Omittable[Name] = None
    gpus: NodeGPUs = 0
    cpu: Omittable[NodeCPU] = None
    memory: Omittable[NodeMemory] = None
    labels: ScenarioLabels | None = None
    state: Annotated[str, one_of(NODE_STATES)] = "ready"


class ScenarioQueue(StrictModel):
    """A department: its rank, over-quota weight, and deserved quota and limit per pool."""

    name: Name
    rank: Rank = 0
    over_quota_weight: QueueWeight = 1.0
    quota: dict[str, Amounts] | None = None
    limit: dict[str, Amounts] | None = None


class ScenarioProject(ScenarioQueue):
    """A project of a department."""

    department: Omittable[Name] = None


class ScenarioWorkload(WorkloadShape):
    """A workload as a scenario submits it (FORMAT.md `workloads` and `submit`)."""

    name: Name
    project: Name
    pools: list[Name] | None = None
    # A scenario may write `node_selector: null` (no selector), which a live submission
    # refuses: the one key whose type is wider here than in the shape it extends.
    node_selector: ScenarioLabels | None = None  # type: ignore[assignment]
    submitted_at: Time = 0.0
    duration: Omittable[Annotated[float, number(ge=0, le=MAX_SECONDS)]] = None


class InitialWorkload(ScenarioWorkload):
    """A workload present at time 0, possibly running already. Beyond FORMAT.md (what a
    copy of a live cluster carries): a pending one's `pending_since` (when it last went
    back to the queue) and `room_wait_since` (when its wait for room counts from), and
    `preemptions`, the times reclaim or priority preemption evicted it so far, and
    `quick_evictions`, how many of the last came in a row soon after a start
    (engine.preemption_loops)."""

    running_on: list[Any] | None = None
    started_at: Omittable[Time] = None
    pending_since: Omittable[Time] = None
    room_wait_since: Omittable[Time] = None
    preemptions: Preemptions = 0
    quick_evictions: Preemptions = 0

    @model_validator(mode="after")
    def _started_needs_running(self) -> InitialWorkload:
        if self.started_at is not None and self.running_on is None:
            raise rule_error("needs `running_on`", at=("started_at",))
        for key in ("pending_since", "room_wait_since"):
            if getattr(self, key) is not None and self.running_on is not None:
                raise rule_error("is for a pending workload, not one with `running_on`", at=(key,))
        return self


class SetPriority(StrictModel):
    """A workload's new priority."""

    workload: Name
    priority: Priority


class _QueueEvent(StrictModel):
    project: Omittable[Name] = None
    department: Omittable[Name] = None


class SetQuota(_QueueEvent):
    """A queue's deserved quota in a pool."""

    pool: Omittable[Name] = None
    gpus: Omittable[Amount] = None
    cpu: Omittable[Amount] = None
    memory: Omittable[Amount] = None


class SetWeight(_QueueEvent):
    """A workload's weight, or a queue's over-quota weight."""

    workload: Omittable[Name] = None
    weight: Omittable[Weight] = None
    over_quota_weight: Omittable[QueueWeight] = None


class ScenarioEvent(StrictModel):
    """One event: exactly one of its keys."""

    submit: Omittable[ScenarioWorkload] = None
    finish: Omittable[Name] = None
    fail: Omittable[Name] = None
    delete: Omittable[Name] = None
    set_priority: Omittable[SetPriority] = None
    set_quota: Omittable[SetQuota] = None
    set_weight: Omittable[SetWeight] = None
    node_down: Omittable[Name] = None
    node_up: Omittable[Name] = None

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if len(data) != 1:
                raise rule_error(
                    "an event has exactly one of {types}, got {keys}",
                    types=", ".join(EVENT_TYPES),
                    keys=", ".join(map(str, data)) or "nothing",
                    about_key=False,
                )
            (kind,) = data
            if kind not in EVENT_TYPES:
                raise rule_error(
                    "unknown event {kind} (events: {types})",
                    kind=show(kind),
                    types=", ".join(EVENT_TYPES),
                    about_key=False,
                )
        return data

    @property
    def type(self) -> str:
        """Which event it is."""
        (kind,) = self.model_fields_set
        return kind


class Expect(StrictModel):
    """What must hold once scheduling reaches a fixed point."""

    running: list[Any] | None = None
    pending: list[Any] | None = None
    completed: list[Any] | None = None
    failed: list[Any] | None = None
    preempted: list[Any] | None = None
    moved: list[Any] | None = None
    only: bool = False
    pods: dict[str, Annotated[int, whole(ge=0, le=1_000_000)]] | None = None
    allocated: dict[str, dict[str, Amounts]] | None = None
    fairshare: dict[str, dict[str, Amounts]] | None = None


class ScenarioStep(StrictModel):
    """A point in simulated time: events, then scheduling, then `expect`."""

    at: Annotated[float, number(ge=0, le=MAX_SCENARIO_TIME)]
    events: Annotated[list[ScenarioEvent], Field(max_length=MAX_EVENTS_PER_STEP)] | None = None
    expect: Expect | None = None


class ScenarioDocument(StrictModel):
    """A whole scenario file."""

    name: Name | None = None
    description: str | None = None
    config: ScenarioConfig | None = None
    pools: list[ScenarioPool] | None = None
    nodes: list[ScenarioNode] | None = None
    departments: list[ScenarioQueue] | None = None
    projects: list[ScenarioProject] | None = None
    workloads: Annotated[list[InitialWorkload], Field(max_length=MAX_SCENARIO_WORKLOADS)] | None = (
        None
    )
    steps: Annotated[list[ScenarioStep], Field(max_length=MAX_STEPS)] | None = None

    @model_validator(mode="after")
    def _bounded_in_all(self) -> ScenarioDocument:
        """Sizes no one entry shows: nodes after `count`, workloads and pods of the whole
        file. The entry that passes a bound is named."""
        nodes = [(("nodes", i), node.count or 1) for i, node in enumerate(self.nodes or [])]
        workloads = list(self.all_workloads())
        pods = [(at, workload.total_pods) for at, workload in workloads]
        for sizes, most, noun in (
            (nodes, MAX_SCENARIO_NODES, "nodes"),
            ([(at, 1) for at, _ in workloads], MAX_SCENARIO_WORKLOADS, "workloads"),
            (pods, MAX_SCENARIO_PODS, "pods"),
        ):
            check_running_total(sizes, most=most, noun=noun, whole="a scenario")
        return self

    def all_workloads(self) -> Iterator[tuple[tuple[str | int, ...], ScenarioWorkload]]:
        """Every workload with where it is: at time 0, then submitted by the steps."""
        for i, workload in enumerate(self.workloads or []):
            yield ("workloads", i), workload
        for s, step in enumerate(self.steps or []):
            for e, event in enumerate(step.events or []):
                if event.submit is not None:
                    yield ("steps", s, "events", e), event.submit
