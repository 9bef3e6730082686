"""Policy profiles: kai is FORMAT.md's defaults (KAI-Scheduler), lab is a new pool's."""

from __future__ import annotations

from scheduler_core.engine import PoolConfig
from scheduler_core.engine.profiles import (
    PROFILE_KAI,
    PROFILE_LAB,
    profile_changes,
    profile_of,
    profile_settings,
    with_profile,
)


def test_kai_is_exactly_the_engine_defaults() -> None:
    default = PoolConfig(name="default")
    assert all(getattr(default, k) == v for k, v in profile_settings(PROFILE_KAI).items())
    assert profile_changes(PROFILE_KAI) == {}


def test_lab_changes_what_the_issue_measured_and_a_setting_beside_it_wins() -> None:
    assert profile_changes(PROFILE_LAB) == {
        "consolidation_weighs_lost_work": (False, True),
        "reclaim_weighs_lost_work": (False, True),
        "over_quota_weight_from_quota": (False, True),
        "reserve_for_gangs": (False, True),
        "consolidation_within_quota": (False, True),
        "max_preemptions_per_workload": (None, 2),
        "preemption_loop_evictions": (None, 3),
    }
    settings = with_profile({"profile": "lab", "reserve_for_gangs": False, "placement": "spread"})
    assert settings["reserve_for_gangs"] is False
    assert settings["reclaim_weighs_lost_work"] is True
    assert settings["placement"] == "spread"
    assert "profile" not in settings
    assert profile_of(settings) is None  # lab with one setting changed: custom
    assert profile_of(with_profile({"profile": "lab"})) == PROFILE_LAB
