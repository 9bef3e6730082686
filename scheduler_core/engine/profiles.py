"""Policy profiles: named sets of pool settings an admin picks with one choice.

- `kai`: exactly KAI-Scheduler / Run:ai (FORMAT.md's defaults). Scenario files get it
  unless they say otherwise, so that they keep deciding as KAI does.
- `lab`: what a lab gets by default (a pool made in the console, the API or `seed_demo`,
  `replay_trace` and the what-if trace runs): the same quota rules, but a move or a
  reclaim is made only while the work it throws away is no more than the GPU-time it
  serves has waited, over-quota GPUs are shared by quota, draining nodes are held for
  a gang that does not fit, pods are moved for work beyond its quota only when they are
  borrowed too and the move is cheap (1/30 of the wait), a workload
  is evicted at most twice, and a preemption loop is held (README's trace section has
  the figures that chose these).

A profile is a preset: it gives the settings it names; a setting stated beside it
wins (`{"profile": "lab", "reserve_for_gangs": False}` is lab without reservations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROFILE_KAI = "kai"
PROFILE_LAB = "lab"
PROFILES = (PROFILE_KAI, PROFILE_LAB)
DEFAULT_PROFILE_FOR_LABS = PROFILE_LAB
DEFAULT_PROFILE_FOR_SCENARIOS = PROFILE_KAI

# One row per setting a profile decides: (setting, kai's value, lab's value).
PROFILE_SETTINGS: tuple[tuple[str, Any, Any], ...] = (
    ("consolidation_weighs_lost_work", False, True),
    ("reclaim_weighs_lost_work", False, True),
    ("over_quota_weight_from_quota", False, True),
    ("reserve_for_gangs", False, True),
    ("consolidation_within_quota", False, True),
    ("max_preemptions_per_workload", None, 2),
    ("preemption_loop_evictions", None, 3),
)

_COLUMN = {PROFILE_KAI: 1, PROFILE_LAB: 2}


def profile_settings(profile: str) -> dict[str, Any]:
    """Every setting `profile` decides, with its value (KeyError: no such profile)."""
    column = _COLUMN[profile]
    return {row[0]: row[column] for row in PROFILE_SETTINGS}


def profile_changes(profile: str) -> dict[str, tuple[Any, Any]]:
    """What `profile` changes from KAI's settings: {setting: (kai's value, its value)}."""
    kai = profile_settings(PROFILE_KAI)
    return {k: (kai[k], v) for k, v in profile_settings(profile).items() if v != kai[k]}


def with_profile(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` with its `profile` key (if any) replaced by the settings it gives; the
    settings stated beside it win."""
    rest = {k: v for k, v in settings.items() if k != "profile"}
    profile = settings.get("profile")
    if profile is None:
        return rest
    return profile_settings(profile) | rest


def profile_of(settings: Mapping[str, Any]) -> str | None:
    """The profile whose every setting `settings` holds (kai first), or None: customised."""
    for profile in PROFILES:
        if all(settings.get(k) == v for k, v in profile_settings(profile).items()):
            return profile
    return None
