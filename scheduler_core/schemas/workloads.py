"""The workload shape: what a submission asks for, wherever it comes from (the API, the
console, a scenario file). References to other objects (project, pools) and whether the
gang fits the cluster are checked by whoever knows the cluster."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    Field,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from scheduler_core.schemas.base import (
    CPU,
    MAX_PODS,
    MAX_SECONDS,
    BackoffLimit,
    Duration,
    GPUs,
    Labels,
    Memory,
    Omittable,
    Pods,
    Priority,
    Slug,
    StrictModel,
    Weight,
    number,
    one_of,
    rule_error,
    string_map,
    with_more_errors,
)
from scheduler_core.schemas.kinds import KINDS, kind_defaults

FLAT_SHAPE = ("pods", "min_pods", "gpus", "cpu", "memory")
MAX_GROUPS = 32
CPU_KIND = "cpu"


def _check_asks(gpus: float | None, cpu: float | None, memory: float | None) -> None:
    """A pod must ask for something: a pod of nothing is placed anywhere, any number of
    times, and holds nothing back."""
    if not (gpus or cpu or memory):
        raise rule_error(
            "is 0 and so are `cpu` and `memory`: a pod must ask for GPUs, CPU or memory",
            at=("gpus",),
        )


def _check_gang(pods: int, min_pods: int | None) -> None:
    if min_pods is not None and min_pods > pods:
        raise rule_error(
            "({min_pods}) must not exceed `pods` ({pods})",
            at=("min_pods",),
            min_pods=min_pods,
            pods=pods,
        )


class PodGroup(StrictModel):
    """Identical pods of a workload: `pods` wanted, at least `min_pods` started together
    (default: all of them, a strict gang), each asking gpus, cpu cores and GiB of memory."""

    name: Omittable[Slug] = None
    pods: Pods = 1
    min_pods: Omittable[Pods] = None
    gpus: GPUs = 0.0
    cpu: CPU = 0.0
    memory: Memory = 0.0

    @model_validator(mode="after")
    def _gang_within_pods(self) -> PodGroup:
        _check_gang(self.pods, self.min_pods)
        _check_asks(self.gpus, self.cpu, self.memory)
        return self

    @property
    def gang(self) -> int:
        """Pods that must start together."""
        return self.pods if self.min_pods is None else self.min_pods


class WorkloadShape(StrictModel):
    """What a workload asks for: its kind (which decides the default priority and
    preemptibility), its pods, either flat (pods, min_pods, gpus, cpu, memory: one group)
    or as several `groups`, where its pods may go and how it is weighed and restarted."""

    kind: Annotated[str, one_of(KINDS)] = "training"
    priority: Omittable[Priority] = None
    preemptible: Omittable[bool] = None
    pods: Omittable[Pods] = None
    min_pods: Omittable[Pods] = None
    gpus: Omittable[GPUs] = None
    cpu: Omittable[CPU] = None
    memory: Omittable[Memory] = None
    groups: Omittable[Annotated[list[PodGroup], Field(max_length=MAX_GROUPS)]] = None
    node_selector: Labels = Field(default_factory=dict)
    weight: Weight = 1.0
    backoff_limit: BackoffLimit | None = None

    @field_validator("groups", mode="wrap")
    @classmethod
    def _group_names_unique(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Reported with the groups' other problems, so one answer lists them all."""
        seen: set[Any] = set()
        twice: list[tuple[int, Any]] = []
        for i, group in enumerate(value if isinstance(value, list) else []):
            name = group.get("name", f"group-{i + 1}") if isinstance(group, dict) else None
            if name is not None and name in seen:
                twice.append((i, name))
            seen.add(name)
        if not twice:
            return handler(value)
        raise with_more_errors(
            handler,
            value,
            [
                rule_error("group name {name!r} is used twice", about_key=False, name=n)
                for _, n in twice
            ],
            [(i, "name") for i, _ in twice],
        )

    @model_validator(mode="after")
    def _one_shape(self) -> WorkloadShape:
        if self.groups is not None:
            for key in FLAT_SHAPE:
                if getattr(self, key) is not None:
                    raise rule_error(
                        "belongs to each group when `groups` is given (give either groups "
                        "or the flat pod shape, not both)",
                        at=(key,),
                    )
            if not self.groups:
                raise rule_error("must list at least one group", at=("groups",))
            if self.total_pods > MAX_PODS:
                raise rule_error(
                    "have {pods} pods in all; a workload has at most {most}",
                    at=("groups",),
                    pods=self.total_pods,
                    most=MAX_PODS,
                )
        else:
            _check_gang(self.pods or 1, self.min_pods)
            _check_asks(self.gpus, self.cpu, self.memory)
        if self.kind == CPU_KIND and any(g.gpus for g in self.pod_groups()):
            raise rule_error(
                "a CPU-only workload cannot ask for GPUs", at=("gpus",), about_key=False
            )
        return self

    @property
    def total_pods(self) -> int:
        """Pods it asks for, all groups together."""
        return sum(g.pods for g in self.groups) if self.groups else self.pods or 1

    def _flat(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FLAT_SHAPE if getattr(self, k) is not None}

    def pod_groups(self) -> list[PodGroup]:
        """Its groups, each named (`main` for the flat shape, else `group-N` when unnamed)
        and with min_pods stated."""
        if self.groups is None:
            flat = PodGroup(name="main", **self._flat())
            return [flat.model_copy(update={"min_pods": flat.gang})]
        return [
            g.model_copy(update={"name": g.name or f"group-{i + 1}", "min_pods": g.gang})
            for i, g in enumerate(self.groups)
        ]

    def priority_and_preemptible(self) -> tuple[int, bool]:
        """Its priority and preemptibility, the kind's defaults filling what it leaves out."""
        return kind_defaults(self.kind, priority=self.priority, preemptible=self.preemptible)


SpecText = Annotated[str, Field(max_length=4096)]
Command = SpecText | Annotated[list[SpecText], Field(max_length=256)]
"""A command line (as the console sends it) or its words (as API clients often do)."""
Env = Annotated[dict[str, SpecText], string_map(max_entries=256)]
"""Environment variables the runtime sets: names to values."""


MAX_PORTS = 8
"""Ports one pod may ask for (a notebook, a TensorBoard, a few more)."""
PORT_PROTOCOLS = ("http",)
"""What Fairway's proxy serves: HTTP (websockets included)."""
PORT_NAME_PATTERN = r"^[a-z]([a-z0-9-]{0,13}[a-z0-9])?$"
PortName = Annotated[str, Field(min_length=1, max_length=15, pattern=PORT_NAME_PATTERN)]
"""A port's name: in its proxy URL and its variable (FAIRWAY_PORT_<NAME>), so short:
lowercase letters, digits and inner dashes, starting with a letter (Kubernetes' rule)."""


class PortSpec(StrictModel):
    """A port each pod serves on (the node picks a free one, FAIRWAY_PORT_<NAME>), opened
    through Fairway's proxy at /proxy/<workload>/<pod>/<name>/ by whoever may see it."""

    name: PortName
    protocol: Annotated[str, one_of(PORT_PROTOCOLS)] = "http"


def _ports_named_once(value: Any) -> Any:
    seen: set[str] = set()
    for port in value:
        if port.name in seen:
            raise rule_error("port name {name!r} is used twice", name=port.name)
        seen.add(port.name)
    return value


Ports = Annotated[
    list[PortSpec], Field(min_length=1, max_length=MAX_PORTS), AfterValidator(_ports_named_once)
]


class RuntimeSpec(StrictModel):
    """What the runtime needs to run a workload."""

    image: Omittable[Annotated[str, Field(max_length=255)]] = None
    command: Omittable[Command] = None
    env: Omittable[Env] = None
    ports: Omittable[Ports] = None
    duration: Omittable[Duration] = None
    checkpoint_every: Omittable[Annotated[float, number(ge=0, le=MAX_SECONDS)]] = None


class WorkloadSubmission(WorkloadShape):
    """A live submission: the shape and its runtime spec."""

    spec: RuntimeSpec = Field(default_factory=RuntimeSpec)


class NewPriority(StrictModel):
    """A workload's new priority."""

    priority: Priority
