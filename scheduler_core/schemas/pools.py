"""Pool settings: how a node pool is scheduled. One set of rules for the API's pools, a
scenario's `config:` and `pools:` entries and a what-if's `changes.pools`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from scheduler_core.engine.snapshot import FAIRSHARE_MODES, PLACEMENTS, POLICIES
from scheduler_core.schemas.base import (
    MAX_CONSOLIDATION_EVALUATIONS,
    Name,
    PerCycle,
    PositiveSeconds,
    Seconds,
    StrictModel,
    UsageK,
    one_of,
    whole,
)

ConsolidationEvaluations = whole(ge=0, le=MAX_CONSOLIDATION_EVALUATIONS)


class PoolRules(StrictModel):
    """The settings every surface shares; a key left out keeps its value (or FORMAT.md's
    default). max_*_per_cycle null: no bound."""

    policy: one_of(POLICIES) = None
    placement: one_of(PLACEMENTS) = None
    preemption: bool = None
    consolidation: bool = None
    max_consolidation_evaluations: ConsolidationEvaluations = None
    max_reclaims_per_cycle: PerCycle | None = None
    max_preemptions_per_cycle: PerCycle | None = None
    min_guaranteed_runtime: Seconds = None
    over_quota_weight_from_quota: bool = None
    fairshare_mode: one_of(FAIRSHARE_MODES) = None


class PoolSettings(PoolRules):
    """A live pool's settings as the API and the database hold them (time-based fairshare
    flat), with its description."""

    description: Annotated[str, Field(max_length=255)] = None
    time_based_window: Seconds = None
    time_based_half_life: PositiveSeconds = None
    time_based_k: UsageK = None


class TimeBased(StrictModel):
    """Time-based fairshare: usage over `window` seconds, halved every `half_life`,
    weighing `k`."""

    window: Seconds = None
    half_life: PositiveSeconds = None
    k: UsageK = None


class ScenarioConfig(PoolRules):
    """A scenario's cluster-wide `config:` (every pool's defaults)."""

    time_based: TimeBased = None


class ScenarioPool(ScenarioConfig):
    """A scenario's pool: its name and any config key it overrides."""

    name: Name


class PoolChange(PoolRules):
    """A what-if change to one pool's settings."""

    pool: Name
