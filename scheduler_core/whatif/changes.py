"""The `changes` of a what-if run: validated against a scenario, then applied to a copy of it.

Shape (every key optional; names are those of the copied cluster or scenario):

    {
      "quotas":  [{"project": "vision", "pool": "a100", "gpus": 4, "limit_gpus": 6},
                  {"department": "research", "pool": "a100", "gpus": 16}],
      "weights": [{"project": "nlp", "over_quota_weight": 3},
                  {"department": "ops", "rank": 1}],
      "pools":   [{"pool": "a100", "policy": "fairshare"}],
      "add_nodes": [{"name": "new-1", "pool": "a100", "gpus": 8, "cpu": 64, "memory": 512,
                     "labels": {"gpu": "a100"}, "count": 1}],
      "remove_nodes": ["gpu-3"]
    }

- quotas: exactly one of project/department, a pool, and any of gpus, cpu, memory
  (deserved, >= 0) and limit_gpus, limit_cpu, limit_memory (>= deserved, null = no limit);
  a key left out keeps its current value.
- weights: exactly one of project/department and over_quota_weight (>= 0) and/or rank
  (a whole number).
- pools: a pool and any of its settings: policy (quota|fairshare|priority), placement
  (binpack|spread), preemption, consolidation, over_quota_weight_from_quota (true/false),
  min_guaranteed_runtime, max_consolidation_evaluations (whole numbers >= 0),
  fairshare_mode (point_in_time|time_based).
- add_nodes: name (new), pool, gpus (whole number >= 0), optional cpu, memory, labels and
  count (adds name-1 .. name-N).
- remove_nodes: names of nodes; they go down at time 0, so their pods are evicted (reason
  fault) and their workloads queue again, exactly as if the machines were taken away.

Errors name the field: {"changes.quotas[0].gpus": ["must be a number of 0 or more, got 'x'"]}.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from scheduler_core.services.errors import FieldErrors

KEYS = ("quotas", "weights", "pools", "add_nodes", "remove_nodes")
RESOURCES = ("gpus", "cpu", "memory")
LIMITS = tuple(f"limit_{r}" for r in RESOURCES)
POOL_CHOICES = {
    "policy": ("quota", "fairshare", "priority"),
    "placement": ("binpack", "spread"),
    "fairshare_mode": ("point_in_time", "time_based"),
}
POOL_BOOLS = ("preemption", "consolidation", "over_quota_weight_from_quota")
POOL_DEFAULTS = {  # FORMAT.md's defaults, for describing a change to a key left out
    "policy": "quota",
    "placement": "binpack",
    "preemption": True,
    "consolidation": True,
    "over_quota_weight_from_quota": False,
    "min_guaranteed_runtime": 0,
    "max_consolidation_evaluations": 100,
    "fairshare_mode": "point_in_time",
}
POOL_COUNTS = ("min_guaranteed_runtime", "max_consolidation_evaluations")
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
MAX_ADDED_NODES = 1000


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def is_whole(value: Any) -> bool:
    return is_number(value) and float(value).is_integer()


def is_empty(changes: dict[str, Any] | None) -> bool:
    return not changes or not any(changes.get(key) for key in KEYS)


class _Names:
    """The names a change may refer to, from the scenario being changed."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.pools = {p["name"] for p in scenario.get("pools") or []}
        self.projects = {p["name"] for p in scenario.get("projects") or []}
        self.departments = {d["name"] for d in scenario.get("departments") or []}
        self.nodes = set(_node_names(scenario))
        self.queues = {("project", p["name"]): p for p in scenario.get("projects") or []} | {
            ("department", d["name"]): d for d in scenario.get("departments") or []
        }


def _node_names(scenario: dict[str, Any]) -> list[str]:
    names = []
    for node in scenario.get("nodes") or []:
        count = node.get("count")
        if count:
            names.extend(f"{node['name']}-{i}" for i in range(1, int(count) + 1))
        else:
            names.append(node["name"])
    return names


def validate_changes(changes: Any, *, scenario: dict[str, Any]) -> dict[str, Any]:
    """Check `changes` against `scenario`; return them normalized or raise ValidationError.

    Every problem is reported at once, keyed `changes.<list>[<i>].<field>`.
    """
    errors = FieldErrors()
    if changes in (None, ""):
        return {}
    if not isinstance(changes, dict):
        errors.add("changes", f"must be an object with any of {', '.join(KEYS)}")
        errors.raise_if_any()
    for key in changes:
        if key not in KEYS:
            errors.add(f"changes.{key}", f"unknown change; use any of {', '.join(KEYS)}")
    names = _Names(scenario)
    normalized: dict[str, Any] = {}
    for key in KEYS:
        items = changes.get(key)
        if items in (None, []):
            continue
        if not isinstance(items, list):
            errors.add(f"changes.{key}", "must be a list")
            continue
        check = _CHECKS[key]
        normalized[key] = [
            check(errors, f"changes.{key}[{i}]", item, names) for i, item in enumerate(items)
        ]
    _check_node_names_unique(errors, normalized, names)
    errors.raise_if_any()
    return normalized


def _owner(errors: FieldErrors, where: str, item: dict, names: _Names) -> tuple[str, str] | None:
    kinds = [k for k in ("project", "department") if k in item]
    if len(kinds) != 1:
        errors.add(where, "name exactly one of 'project' or 'department'")
        return None
    kind = kinds[0]
    name = item[kind]
    known = names.projects if kind == "project" else names.departments
    if name not in known:
        errors.add(f"{where}.{kind}", f"no {kind} named {name!r}")
        return None
    return kind, name


def _require_object(errors: FieldErrors, where: str, item: Any) -> bool:
    if not isinstance(item, dict):
        errors.add(where, "must be an object")
        return False
    return True


def _unknown_fields(errors: FieldErrors, where: str, item: dict, allowed: tuple[str, ...]):
    for key in item:
        if key not in allowed:
            errors.add(f"{where}.{key}", f"unknown field; use any of {', '.join(allowed)}")


def _pool(errors: FieldErrors, where: str, item: dict, names: _Names) -> None:
    pool = item.get("pool")
    if pool is None:
        errors.add(f"{where}.pool", "is required")
    elif pool not in names.pools:
        errors.add(f"{where}.pool", f"no pool named {pool!r}")


def _check_quota(errors: FieldErrors, where: str, item: Any, names: _Names) -> dict:
    if not _require_object(errors, where, item):
        return {}
    _unknown_fields(errors, where, item, ("project", "department", "pool", *RESOURCES, *LIMITS))
    owner = _owner(errors, where, item, names)
    _pool(errors, where, item, names)
    values = {k: item[k] for k in (*RESOURCES, *LIMITS) if k in item}
    current = names.queues.get(owner, {}) if owner else {}
    if not values:
        errors.add(where, f"change at least one of {', '.join((*RESOURCES, *LIMITS))}")
    for key, value in values.items():
        if value is None and key in LIMITS:
            continue
        if not is_number(value) or value < 0:
            errors.add(f"{where}.{key}", f"must be a number of 0 or more, got {value!r}")
    for resource in RESOURCES:
        # a value left out keeps the current one: check the pair as it would end up
        pool_quota = (current.get("quota") or {}).get(item.get("pool"), {})
        pool_limit = (current.get("limit") or {}).get(item.get("pool"), {})
        deserved = values.get(resource, pool_quota.get(resource, 0))
        limit = values.get(f"limit_{resource}", pool_limit.get(resource))
        changed = resource in values or f"limit_{resource}" in values
        if changed and is_number(deserved) and is_number(limit) and limit < deserved:
            if f"limit_{resource}" in values:
                errors.add(
                    f"{where}.limit_{resource}",
                    f"the limit ({limit:g}) must be at least the deserved quota ({deserved:g})",
                )
            else:
                errors.add(
                    f"{where}.{resource}",
                    f"is above the current limit ({limit:g}); raise limit_{resource} too",
                )
    return dict(item)


def _check_weight(errors: FieldErrors, where: str, item: Any, names: _Names) -> dict:
    if not _require_object(errors, where, item):
        return {}
    _unknown_fields(errors, where, item, ("project", "department", "over_quota_weight", "rank"))
    _owner(errors, where, item, names)
    if "over_quota_weight" not in item and "rank" not in item:
        errors.add(where, "change over_quota_weight and/or rank")
    weight = item.get("over_quota_weight")
    if "over_quota_weight" in item and (not is_number(weight) or weight < 0):
        errors.add(f"{where}.over_quota_weight", f"must be a number of 0 or more, got {weight!r}")
    if "rank" in item and not is_whole(item["rank"]):
        errors.add(f"{where}.rank", f"must be a whole number, got {item['rank']!r}")
    return dict(item)


def _check_pool(errors: FieldErrors, where: str, item: Any, names: _Names) -> dict:
    if not _require_object(errors, where, item):
        return {}
    settings = (*POOL_CHOICES, *POOL_BOOLS, *POOL_COUNTS)
    _unknown_fields(errors, where, item, ("pool", *settings))
    _pool(errors, where, item, names)
    if not any(key in item for key in settings):
        errors.add(where, f"change at least one of {', '.join(settings)}")
    for key, options in POOL_CHOICES.items():
        if key in item and item[key] not in options:
            errors.add(f"{where}.{key}", f"must be one of {', '.join(options)}, got {item[key]!r}")
    for key in POOL_BOOLS:
        if key in item and not isinstance(item[key], bool):
            errors.add(f"{where}.{key}", f"must be true or false, got {item[key]!r}")
    for key in POOL_COUNTS:
        if key in item and (not is_whole(item[key]) or item[key] < 0):
            errors.add(f"{where}.{key}", f"must be a whole number of 0 or more, got {item[key]!r}")
    return dict(item)


def _check_add_node(errors: FieldErrors, where: str, item: Any, names: _Names) -> dict:
    if not _require_object(errors, where, item):
        return {}
    _unknown_fields(
        errors, where, item, ("name", "pool", "gpus", "cpu", "memory", "labels", "count")
    )
    name = item.get("name")
    if not isinstance(name, str) or not NODE_NAME.match(name):
        errors.add(
            f"{where}.name",
            f"use lowercase letters, digits and dashes (like 'gpu-9'), got {name!r}",
        )
    _pool(errors, where, item, names)
    gpus = item.get("gpus")
    if not is_whole(gpus) or gpus < 0:
        errors.add(f"{where}.gpus", f"must be a whole number of 0 or more, got {gpus!r}")
    for key in ("cpu", "memory"):
        if key in item and (not is_number(item[key]) or item[key] < 0):
            errors.add(f"{where}.{key}", f"must be a number of 0 or more, got {item[key]!r}")
    labels = item.get("labels", {})
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        errors.add(f"{where}.labels", "must map label names to values (strings)")
    count = item.get("count", 1)
    if not is_whole(count) or not 1 <= count <= MAX_ADDED_NODES:
        errors.add(f"{where}.count", f"must be a whole number from 1 to {MAX_ADDED_NODES}")
    return dict(item)


def _check_remove_node(errors: FieldErrors, where: str, item: Any, names: _Names) -> str:
    if not isinstance(item, str):
        errors.add(where, f"must be a node name, got {item!r}")
    elif item not in names.nodes:
        errors.add(where, f"no node named {item!r}")
    return item


_CHECKS = {
    "quotas": _check_quota,
    "weights": _check_weight,
    "pools": _check_pool,
    "add_nodes": _check_add_node,
    "remove_nodes": _check_remove_node,
}


def added_node_names(item: dict[str, Any]) -> list[str]:
    count = int(item.get("count", 1))
    if count == 1 and "count" not in item:
        return [item["name"]]
    return [f"{item['name']}-{i}" for i in range(1, count + 1)]


def _check_node_names_unique(errors: FieldErrors, changes: dict[str, Any], names: _Names) -> None:
    seen = set(names.nodes)
    for i, item in enumerate(changes.get("add_nodes", [])):
        bad_count = f"changes.add_nodes[{i}].count" in errors.errors
        if not isinstance(item.get("name"), str) or bad_count:
            continue
        for name in added_node_names(item):
            if name in seen:
                errors.add(f"changes.add_nodes[{i}].name", f"a node named {name!r} already exists")
                break
            seen.add(name)


def apply_changes(scenario: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A changed deep copy of `scenario` (changes must come from validate_changes)."""
    changed = copy.deepcopy(scenario)
    queues = {("project", p["name"]): p for p in changed.get("projects") or []} | {
        ("department", d["name"]): d for d in changed.get("departments") or []
    }
    for item in changes.get("quotas", []):
        owner = queues[_owner_key(item)]
        pool = item["pool"]
        for resource in RESOURCES:
            if resource in item:
                owner.setdefault("quota", {}).setdefault(pool, {})[resource] = item[resource]
            limit = item.get(f"limit_{resource}", ...)
            if limit is None:
                owner.get("limit", {}).get(pool, {}).pop(resource, None)
            elif limit is not ...:
                owner.setdefault("limit", {}).setdefault(pool, {})[resource] = limit
    for item in changes.get("weights", []):
        owner = queues[_owner_key(item)]
        for key in ("over_quota_weight", "rank"):
            if key in item:
                owner[key] = item[key]
    pools = {p["name"]: p for p in changed.get("pools") or []}
    for item in changes.get("pools", []):
        pools[item["pool"]].update({k: v for k, v in item.items() if k != "pool"})
    for item in changes.get("add_nodes", []):
        for name in added_node_names(item):
            node = {"name": name, "pool": item["pool"], "gpus": int(item["gpus"])}
            node.update({k: item[k] for k in ("cpu", "memory", "labels") if k in item})
            changed.setdefault("nodes", []).append(node)
    removed = changes.get("remove_nodes", [])
    if removed:
        steps = changed.setdefault("steps", [])
        if not steps or steps[0].get("at", 0) != 0:
            steps.insert(0, {"at": 0})
        steps[0]["events"] = [{"node_down": n} for n in removed] + list(
            steps[0].get("events") or []
        )
    return changed


def _owner_key(item: dict[str, Any]) -> tuple[str, str]:
    kind = "project" if "project" in item else "department"
    return kind, item[kind]


def describe_changes(changes: dict[str, Any], *, scenario: dict[str, Any]) -> list[str]:
    """One plain sentence per change, with the value it replaces ("vision in a100: ...")."""
    queues = {("project", p["name"]): p for p in scenario.get("projects") or []} | {
        ("department", d["name"]): d for d in scenario.get("departments") or []
    }
    pools = {p["name"]: p for p in scenario.get("pools") or []}
    lines = []
    for item in changes.get("quotas", []):
        owner = queues.get(_owner_key(item), {})
        pool = item["pool"]
        for key in (*RESOURCES, *LIMITS):
            if key in item:
                section, resource = ("limit", key[6:]) if key in LIMITS else ("quota", key)
                before = owner.get(section, {}).get(pool, {}).get(resource)
                before = 0 if before is None and section == "quota" else before
                lines.append(
                    f"{_owner_key(item)[1]} in {pool}: {key.replace('_', ' ')} "
                    f"{_show(before)} -> {_show(item[key])}"
                )
    for item in changes.get("weights", []):
        owner = queues.get(_owner_key(item), {})
        for key in ("over_quota_weight", "rank"):
            if key in item:
                lines.append(
                    f"{_owner_key(item)[1]}: {key.replace('_', ' ')} "
                    f"{_show(owner.get(key, 1 if key != 'rank' else 0))} -> {_show(item[key])}"
                )
    for item in changes.get("pools", []):
        for key, value in item.items():
            if key != "pool":
                before = pools.get(item["pool"], {}).get(key, POOL_DEFAULTS.get(key))
                lines.append(
                    f"pool {item['pool']}: {key.replace('_', ' ')} {_show(before)} -> "
                    f"{_show(value)}"
                )
    for item in changes.get("add_nodes", []):
        added = added_node_names(item)
        label = added[0] if len(added) == 1 else f"{added[0]} .. {added[-1]}"
        lines.append(f"add {label} to {item['pool']} ({item['gpus']:g} GPUs each)")
    lines.extend(f"remove node {name}" for name in changes.get("remove_nodes", []))
    return lines


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
