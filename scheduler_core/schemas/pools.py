"""Pool settings: how a node pool is scheduled. One set of rules for the API's pools, a
scenario's `config:` and `pools:` entries and a what-if's `changes.pools`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from scheduler_core.engine.profiles import PROFILES
from scheduler_core.engine.snapshot import FAIRSHARE_MODES, PLACEMENTS, POLICIES
from scheduler_core.schemas.base import (
    MAX_CONSOLIDATION_EVALUATIONS,
    Name,
    Omittable,
    PerCycle,
    PerWorkload,
    PositiveSeconds,
    Seconds,
    StrictModel,
    UsageK,
    number,
    one_of,
    whole,
)

ConsolidationEvaluations = Annotated[int, whole(ge=0, le=MAX_CONSOLIDATION_EVALUATIONS)]
Policy = Annotated[str, one_of(POLICIES)]
Placement = Annotated[str, one_of(PLACEMENTS)]
FairshareMode = Annotated[str, one_of(FAIRSHARE_MODES)]
Profile = Annotated[str, one_of(PROFILES)]
LostWorkRatio = Annotated[float, number(gt=0, le=10)]
# choices.Backend's values (the schemas import no Django; a test keeps the two equal)
BACKENDS = ("simulated", "agent", "slurm")
MAX_GRACE_PERIOD = 86400
BackendName = Annotated[str, one_of(BACKENDS)]
GracePeriod = Annotated[int, whole(ge=0, le=MAX_GRACE_PERIOD)]


class PoolRules(StrictModel):
    """The settings every surface shares; a key left out keeps its value (or FORMAT.md's
    default). max_*_per_cycle null: no bound. `profile` (engine.profiles) gives the
    settings it names; a setting stated beside it wins."""

    profile: Omittable[Profile] = None
    policy: Omittable[Policy] = None
    placement: Omittable[Placement] = None
    preemption: Omittable[bool] = None
    consolidation: Omittable[bool] = None
    max_consolidation_evaluations: Omittable[ConsolidationEvaluations] = None
    consolidation_weighs_lost_work: Omittable[bool] = None
    consolidation_within_quota: Omittable[bool] = None
    reclaim_weighs_lost_work: Omittable[bool] = None
    reclaim_lost_work_ratio: Omittable[LostWorkRatio] = None
    reserve_for_gangs: Omittable[bool] = None
    max_reclaims_per_cycle: PerCycle | None = None
    max_preemptions_per_cycle: PerCycle | None = None
    min_guaranteed_runtime: Omittable[Seconds] = None
    max_preemptions_per_workload: PerWorkload | None = None
    preemption_loop_evictions: PerWorkload | None = None
    over_quota_weight_from_quota: Omittable[bool] = None
    fairshare_mode: Omittable[FairshareMode] = None


class PoolSettings(PoolRules):
    """A live pool's settings as the API and the database hold them (time-based fairshare
    flat), with its description."""

    description: Omittable[Annotated[str, Field(max_length=255)]] = None
    time_based_window: Omittable[Seconds] = None
    time_based_half_life: Omittable[PositiveSeconds] = None
    time_based_k: Omittable[UsageK] = None
    backend: Omittable[BackendName] = None
    grace_period: Omittable[GracePeriod] = None
    # the backend's own settings, checked by its executor's settings_model (a Slurm
    # pool's partition, signal, ...: docs/slurm.md)
    backend_settings: Omittable[dict[str, Any]] = None


class TimeBased(StrictModel):
    """Time-based fairshare: usage over `window` seconds, halved every `half_life`,
    weighing `k`."""

    window: Omittable[Seconds] = None
    half_life: Omittable[PositiveSeconds] = None
    k: Omittable[UsageK] = None


class ScenarioConfig(PoolRules):
    """A scenario's cluster-wide `config:` (every pool's defaults)."""

    time_based: Omittable[TimeBased] = None


class ScenarioPool(ScenarioConfig):
    """A scenario's pool: its name and any config key it overrides."""

    name: Name


class PoolChange(PoolRules):
    """A what-if change to one pool's settings."""

    pool: Name
