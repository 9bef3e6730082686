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
- pools: a pool and any of its settings (the schema of a scenario's pool entries, less
  time_based): policy (quota|fairshare|priority), placement (binpack|spread), preemption,
  consolidation, consolidation_weighs_lost_work, consolidation_within_quota,
  reclaim_weighs_lost_work, reserve_for_gangs, over_quota_weight_from_quota
  (true/false), min_guaranteed_runtime,
  max_consolidation_evaluations (whole numbers >= 0), max_reclaims_per_cycle,
  max_preemptions_per_cycle, max_preemptions_per_workload (whole numbers >= 1, null = no
  bound), fairshare_mode
  (point_in_time|time_based).
- add_nodes: name (new), pool, gpus (whole number >= 0), optional cpu, memory, labels and
  count (adds name-1 .. name-N).
- remove_nodes: names of nodes; they go down at time 0, so their pods are evicted (reason
  fault) and their workloads queue again, exactly as if the machines were taken away.

The shape of each change is the schema's (`scheduler_core.schemas.changes`); this module
checks the names against the scenario and applies the changes. Errors name the field:
{"changes.quotas[0].gpus": ["must be a number >= 0, got 'x'"]}.
"""

from __future__ import annotations

import copy
from typing import Any

from scheduler_core.engine.profiles import with_profile
from scheduler_core.schemas.base import counted_names
from scheduler_core.schemas.changes import LIMITS, RESOURCES, AddNode, Changes, QuotaChange
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.services.errors import FieldErrors

KEYS = tuple(Changes.model_fields)
POOL_DEFAULTS = {  # FORMAT.md's defaults, for describing a change to a key left out
    "policy": "quota",
    "placement": "binpack",
    "preemption": True,
    "consolidation": True,
    "over_quota_weight_from_quota": False,
    "min_guaranteed_runtime": 0,
    "max_consolidation_evaluations": 100,
    "consolidation_weighs_lost_work": False,
    "consolidation_within_quota": False,
    "reclaim_weighs_lost_work": False,
    "reserve_for_gangs": False,
    "max_reclaims_per_cycle": 100,
    "max_preemptions_per_cycle": 100,
    "max_preemptions_per_workload": None,
    "preemption_loop_evictions": None,
    "reclaim_lost_work_ratio": 1.0,
    "fairshare_mode": "point_in_time",
}


def is_empty(changes: dict[str, Any] | None) -> bool:
    return not changes or not any(changes.get(key) for key in KEYS)


class _Names:
    """The names a change may refer to, from the scenario being changed."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.pools = {p["name"] for p in scenario.get("pools") or []}
        self.nodes = set(_node_names(scenario))
        self.queues = {("project", p["name"]): p for p in scenario.get("projects") or []} | {
            ("department", d["name"]): d for d in scenario.get("departments") or []
        }


def _node_names(scenario: dict[str, Any]) -> list[str]:
    return [
        name
        for node in scenario.get("nodes") or []
        for name in counted_names(node["name"], node.get("count"))
    ]


def validate_changes(changes: Any, *, scenario: dict[str, Any]) -> dict[str, Any]:
    """Check `changes` against `scenario`; return them normalized or raise ValidationError.

    Every problem is reported at once, keyed `changes.<list>[<i>].<field>`: the schema's,
    and names that the scenario does not have (looked up even in items of a bad shape).
    """
    if changes in (None, ""):
        return {}
    errors = FieldErrors()
    parsed: Changes | None = None
    try:
        parsed = validate(Changes, changes)
    except SchemaInvalid as exc:
        errors.extend(exc.by_field("changes"))
    names = _Names(scenario)
    if isinstance(changes, dict):
        _check_names(errors, changes, names)
    if parsed is not None:
        for i, quota in enumerate(parsed.quotas):
            if quota.owner in names.queues:
                _check_limits(errors, f"changes.quotas[{i}]", quota, names.queues[quota.owner])
    errors.raise_if_any()
    assert parsed is not None
    return {
        key: [item if isinstance(item, str) else item.given() for item in items]
        for key in KEYS
        if (items := getattr(parsed, key))
    }


def _items(changes: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    items = changes.get(key)
    if not isinstance(items, list):
        return []
    return [(f"changes.{key}[{i}]", item) for i, item in enumerate(items)]


def _check_names(errors: FieldErrors, changes: dict[str, Any], names: _Names) -> None:
    """Every name a change gives (as a string) must be one of the scenario's."""
    for key in ("quotas", "weights"):
        for where, item in _items(changes, key):
            for kind in ("project", "department"):
                name = item.get(kind) if isinstance(item, dict) else None
                if isinstance(name, str) and (kind, name) not in names.queues:
                    errors.add(f"{where}.{kind}", f"no {kind} named {name!r}")
    for key in ("quotas", "pools", "add_nodes"):
        for where, item in _items(changes, key):
            pool = item.get("pool") if isinstance(item, dict) else None
            if isinstance(pool, str) and pool not in names.pools:
                errors.add(f"{where}.pool", f"no pool named {pool!r}")
    seen = set(names.nodes)
    for where, item in _items(changes, "add_nodes"):
        try:
            added = validate(AddNode, item).names()
        except SchemaInvalid:
            continue  # its shape is reported already
        for name in added:
            if name in seen:
                errors.add(f"{where}.name", f"a node named {name!r} already exists")
                break
            seen.add(name)
    for where, name in _items(changes, "remove_nodes"):
        if isinstance(name, str) and name not in names.nodes:
            errors.add(where, f"no node named {name!r}")


def _check_limits(
    errors: FieldErrors, where: str, item: QuotaChange, current: dict[str, Any]
) -> None:
    """A limit stays at or above the deserved quota, counting the values left unchanged."""
    values = {k: v for k, v in item.given().items() if k in (*RESOURCES, *LIMITS)}
    pool_quota = (current.get("quota") or {}).get(item.pool, {})
    pool_limit = (current.get("limit") or {}).get(item.pool, {})
    for resource in RESOURCES:
        deserved = values.get(resource, pool_quota.get(resource, 0))
        limit = values.get(f"limit_{resource}", pool_limit.get(resource))
        changed = resource in values or f"limit_{resource}" in values
        if changed and deserved is not None and limit is not None and limit < deserved:
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


def added_node_names(item: dict[str, Any]) -> list[str]:
    """The names of the nodes a (validated) add_nodes item adds."""
    return counted_names(item["name"], item.get("count"))


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
        pools[item["pool"]].update(_pool_settings(item))
    for item in changes.get("add_nodes", []):
        for name in added_node_names(item):
            node = {"name": name, "pool": item["pool"], "gpus": item["gpus"]}
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


def _pool_settings(item: dict[str, Any]) -> dict[str, Any]:
    """The settings a pool change sets: those of its profile, if any, and those stated."""
    return with_profile({k: v for k, v in item.items() if k != "pool"})


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
        if "profile" in item:
            lines.append(f"pool {item['pool']}: profile {item['profile']}")
        for key, value in _pool_settings(item).items():
            before = pools.get(item["pool"], {}).get(key, POOL_DEFAULTS.get(key))
            if before != value or key in item:
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
