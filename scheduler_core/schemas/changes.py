"""What-if changes: the shape of each change. Whether the names exist, and how a change
sits with the values it replaces, is checked against the scenario being changed."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ModelWrapValidatorHandler, model_validator

from scheduler_core.schemas.base import (
    MAX_CHANGES,
    Amount,
    Labels,
    Name,
    NodeCPU,
    NodeGPUs,
    NodeMemory,
    Omittable,
    QueueWeight,
    Rank,
    StrictModel,
    check_running_total,
    counted_names,
    name_of,
    rule_error,
    whole,
    with_more_errors,
)
from scheduler_core.schemas.pools import PoolChange

RESOURCES = ("gpus", "cpu", "memory")
LIMITS = tuple(f"limit_{r}" for r in RESOURCES)
MAX_ADDED_NODES = 1000
"""Nodes one what-if run adds, all `add_nodes` entries together."""
NODE_NAME = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"


class _QueueTarget(StrictModel):
    """Names exactly one project or department."""

    project: Omittable[Name] = None
    department: Omittable[Name] = None

    @model_validator(mode="after")
    def _one_owner(self) -> _QueueTarget:
        if (self.project is None) == (self.department is None):
            raise rule_error("name exactly one of `project` or `department`", about_key=False)
        return self

    @property
    def owner(self) -> tuple[str, str]:
        """("project" | "department", name)."""
        if self.project is not None:
            return "project", self.project
        if self.department is not None:
            return "department", self.department
        raise AssertionError("_one_owner lets exactly one through")


class QuotaChange(_QueueTarget):
    """Deserved quota (>= 0) and limits (null: no limit) of a queue in a pool."""

    pool: Name
    gpus: Omittable[Amount] = None
    cpu: Omittable[Amount] = None
    memory: Omittable[Amount] = None
    limit_gpus: Amount | None = None
    limit_cpu: Amount | None = None
    limit_memory: Amount | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> QuotaChange:
        if not self.model_fields_set & {*RESOURCES, *LIMITS}:
            raise rule_error(
                "change at least one of {keys}",
                keys=", ".join((*RESOURCES, *LIMITS)),
                about_key=False,
            )
        return self


class WeightChange(_QueueTarget):
    """A queue's over-quota weight and/or rank."""

    over_quota_weight: Omittable[QueueWeight] = None
    rank: Omittable[Rank] = None

    @model_validator(mode="after")
    def _changes_something(self) -> WeightChange:
        if not self.model_fields_set & {"over_quota_weight", "rank"}:
            raise rule_error("change `over_quota_weight` and/or `rank`", about_key=False)
        return self


class PoolSettingsChange(PoolChange):
    """A pool and at least one of its settings."""

    @model_validator(mode="after")
    def _changes_something(self) -> PoolSettingsChange:
        if not self.model_fields_set - {"pool"}:
            raise rule_error(
                "change at least one of {keys}",
                keys=", ".join(k for k in PoolChange.model_fields if k != "pool"),
                about_key=False,
            )
        return self


class AddNode(StrictModel):
    """New nodes: `name` (or name-1 .. name-N with `count`) in a pool."""

    name: Annotated[str, Field(pattern=NODE_NAME)]
    pool: Name
    gpus: NodeGPUs
    cpu: Omittable[NodeCPU] = None
    memory: Omittable[NodeMemory] = None
    labels: Omittable[Labels] = None
    count: Omittable[Annotated[int, whole(ge=1, le=MAX_ADDED_NODES)]] = None

    def names(self) -> list[str]:
        """The names of the nodes it adds."""
        return counted_names(self.name, self.count)


class Changes(StrictModel):
    """The changes of a what-if run; every key optional."""

    @model_validator(mode="wrap")
    @classmethod
    def _unknown_changes(cls, data: Any, handler: ModelWrapValidatorHandler[Changes]) -> Changes:
        """An unknown change is named with every other problem."""
        unknown = [k for k in data if k not in cls.model_fields] if isinstance(data, dict) else []
        if not unknown:
            return handler(data)
        raise with_more_errors(
            handler,
            {k: v for k, v in data.items() if k in cls.model_fields},
            [
                rule_error("unknown change; use any of {keys}", keys=", ".join(cls.model_fields))
                for _ in unknown
            ],
            [(k,) for k in unknown],
        )

    quotas: Annotated[list[QuotaChange], Field(max_length=MAX_CHANGES)] = Field(
        default_factory=list
    )
    weights: Annotated[list[WeightChange], Field(max_length=MAX_CHANGES)] = Field(
        default_factory=list
    )
    pools: Annotated[list[PoolSettingsChange], Field(max_length=MAX_CHANGES)] = Field(
        default_factory=list
    )
    add_nodes: Annotated[list[AddNode], Field(max_length=MAX_CHANGES)] = Field(default_factory=list)
    remove_nodes: Annotated[
        list[Annotated[Name, name_of("node")]], Field(max_length=MAX_CHANGES)
    ] = Field(default_factory=list)

    @model_validator(mode="after")
    def _added_nodes_bounded(self) -> Changes:
        check_running_total(
            ((("add_nodes", i), node.count or 1) for i, node in enumerate(self.add_nodes)),
            most=MAX_ADDED_NODES,
            noun="added nodes",
            whole="a what-if run",
        )
        return self
