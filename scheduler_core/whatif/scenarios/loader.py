"""Parse and validate a scenario (YAML or JSON, FORMAT.md v1) into engine objects.

Every problem becomes a ScenarioError naming the file, the entry and the field; no
traceback ever reaches a user.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from scheduler_core.engine.resources import UNLIMITED, Resources
from scheduler_core.engine.snapshot import (
    DEFAULT_PRIORITY_BY_KIND,
    FAIRSHARE_MODES,
    KINDS,
    NODE_STATES,
    PLACEMENTS,
    POLICIES,
    STATUS_RUNNING,
    NodeSpec,
    PodGroupSpec,
    PodPlacement,
    PoolConfig,
    QueueSpec,
    WorkloadSpec,
    default_preemptible,
)
from scheduler_core.whatif.scenarios.errors import ScenarioError
from scheduler_core.whatif.scenarios.model import Event, Expect, Scenario, Step

TOP_KEYS = {
    "name",
    "description",
    "config",
    "pools",
    "nodes",
    "departments",
    "projects",
    "workloads",
    "steps",
}
POOL_CONFIG_KEYS = {
    "policy",
    "placement",
    "preemption",
    "consolidation",
    "max_consolidation_evaluations",
    "max_reclaims_per_cycle",
    "max_preemptions_per_cycle",
    "min_guaranteed_runtime",
    "over_quota_weight_from_quota",
    "fairshare_mode",
    "time_based",
}
TIME_BASED_KEYS = {"window", "half_life", "k"}
NODE_KEYS = {"name", "count", "pool", "gpus", "cpu", "memory", "labels", "state"}
QUEUE_KEYS = {"name", "rank", "over_quota_weight", "quota", "limit"}
RESOURCE_KEYS = ("gpus", "cpu", "memory")
GROUP_KEYS = {"name", "pods", "min_pods", "gpus", "cpu", "memory"}
WORKLOAD_KEYS = {
    "name",
    "project",
    "kind",
    "priority",
    "preemptible",
    "pools",
    "pods",
    "min_pods",
    "gpus",
    "cpu",
    "memory",
    "weight",
    "node_selector",
    "submitted_at",
    "duration",
    "backoff_limit",
    "running_on",
    "started_at",
    "groups",
}
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
EXPECT_LISTS = ("running", "pending", "completed", "failed", "preempted", "moved")
EXPECT_KEYS = {*EXPECT_LISTS, "only", "pods", "allocated", "fairshare"}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Where:
    """Where in the file we are, for error messages."""

    def __init__(self, source: str, entry: str = "") -> None:
        self.source = source
        self.entry = entry

    def at(self, entry: str) -> _Where:
        return _Where(self.source, entry)

    def fail(self, message: str) -> ScenarioError:
        where = f"{self.source}: {self.entry}: " if self.entry else f"{self.source}: "
        return ScenarioError(where + message)

    def mapping(self, value: Any, what: str = "this entry") -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(f"{what} must be a mapping, got {_show(value)}")
        for k in value:
            if not isinstance(k, str):
                raise self.fail(f"keys must be strings, got {_show(k)}")
        return dict(value)

    def keys(self, data: Mapping[str, Any], allowed: set[str]) -> None:
        unknown = sorted(k for k in data if k not in allowed)
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")

    def number(
        self,
        data: Mapping[str, Any],
        key: str,
        default: float | None,
        *,
        minimum: float | None = 0.0,
    ) -> float | None:
        if key not in data or (data[key] is None and default is not None):
            return default
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            bound = f" >= {minimum:g}" if minimum is not None else ""
            raise self.fail(f"{key!r} must be a number{bound}, got {_show(v)}")
        if minimum is not None and v < minimum:
            raise self.fail(f"{key!r} must be a number >= {minimum:g}, got {_show(v)}")
        return float(v)

    def req_number(
        self, data: Mapping[str, Any], key: str, default: float, *, minimum: float | None = 0.0
    ) -> float:
        v = self.number(data, key, default, minimum=minimum)
        assert v is not None
        return v

    def integer(
        self, data: Mapping[str, Any], key: str, default: int | None, *, minimum: int | None = 0
    ) -> int | None:
        if key not in data:
            return default
        v = data[key]
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            bound = f" >= {minimum}" if minimum is not None else ""
            raise self.fail(f"{key!r} must be a whole number{bound}, got {_show(v)}")
        if minimum is not None and v < minimum:
            raise self.fail(f"{key!r} must be a whole number >= {minimum}, got {_show(v)}")
        return v

    def req_integer(
        self, data: Mapping[str, Any], key: str, default: int, *, minimum: int | None = 0
    ) -> int:
        v = self.integer(data, key, default, minimum=minimum)
        assert v is not None
        return v

    def boolean(self, data: Mapping[str, Any], key: str, default: bool) -> bool:
        if key not in data:
            return default
        v = data[key]
        if not isinstance(v, bool):
            raise self.fail(f"{key!r} must be true or false, got {_show(v)}")
        return v

    def string(self, data: Mapping[str, Any], key: str, default: str | None = None) -> str:
        if key not in data:
            if default is None:
                raise self.fail(f"{key!r} is required")
            return default
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, str | int | float) or str(v).strip() == "":
            raise self.fail(f"{key!r} must be a non-empty name, got {_show(v)}")
        return str(v)

    def choice(
        self, data: Mapping[str, Any], key: str, default: str, options: tuple[str, ...]
    ) -> str:
        if key not in data:
            return default
        v = data[key]
        if v not in options:
            raise self.fail(f"{key!r} must be one of {', '.join(options)}, got {_show(v)}")
        return str(v)

    def items(self, data: Mapping[str, Any], key: str) -> list[Any]:
        v = data.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(f"{key!r} must be a list, got {_show(v)}")
        return v

    def labels(self, data: Mapping[str, Any], key: str) -> dict[str, str]:
        v = data.get(key)
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise self.fail(f"{key!r} must be a mapping of label: value, got {_show(v)}")
        out = {}
        for k, val in v.items():
            if not isinstance(k, str) or isinstance(val, (list, dict)) or val is None:
                raise self.fail(f"{key!r} must map label names to values, got {_show(dict(v))}")
            out[k] = str(val).lower() if isinstance(val, bool) else str(val)
        return out


def _entry_name(kind: str, index: int, item: Any) -> str:
    if isinstance(item, Mapping) and "name" in item:
        return f"{kind}[{index}] (name {str(item['name'])!r})"
    return f"{kind}[{index}]"


def _read(text_or_path: str | Path) -> tuple[str, str]:
    """(source name, text) from a path or from scenario text."""
    if isinstance(text_or_path, Path):
        path = text_or_path
    elif "\n" not in text_or_path and len(text_or_path) < 4096:
        path = Path(text_or_path)
        if not path.exists():
            if text_or_path.strip().endswith((".yaml", ".yml", ".json")):
                raise ScenarioError(f"{text_or_path}: no such file")
            return "scenario", text_or_path
    else:
        return "scenario", text_or_path
    try:
        return path.name, path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a UTF-8 text file") from None


def load_scenario(text_or_path: str | Path, *, source: str | None = None) -> Scenario:
    """Parse and validate a scenario from a path or from YAML/JSON text (`source` names
    it in error messages). Raises ScenarioError with a clear message."""
    name, text = _read(text_or_path)
    source = source or name
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML/JSON"
        raise ScenarioError(f"{source}: cannot parse{where}: {problem}") from None
    return parse_scenario(data, source)


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """Validate already-parsed data (a dict as in FORMAT.md)."""
    top = _Where(source)
    doc = top.mapping(data, "the scenario")
    top.keys(doc, TOP_KEYS)
    config = _parse_config(top.at("config"), doc.get("config"), {})
    pools = _parse_pools(top, doc, config)
    pool_names = [p.name for p in pools]
    nodes = _parse_nodes(top, doc, pool_names)
    departments, projects = _parse_queues(top, doc, pool_names)
    queues = tuple(departments + projects)
    project_names = {q.name for q in projects}
    node_map = {n.name: n for n in nodes}
    workloads: list[WorkloadSpec] = []
    durations: dict[str, float | None] = {}
    known: set[str] = set()
    for i, item in enumerate(top.items(doc, "workloads")):
        where = top.at(_entry_name("workloads", i, item))
        spec, duration = _parse_workload(
            where, item, project_names, pool_names, node_map, i, allow_running=True
        )
        if spec.id in known:
            raise where.fail(f"duplicate workload name {spec.id!r}")
        known.add(spec.id)
        workloads.append(spec)
        durations[spec.id] = duration
    _check_initial_capacity(top, workloads, node_map)
    steps = _parse_steps(
        top, doc, known, project_names, {d.name for d in departments}, pool_names, node_map
    )
    name = doc.get("name", Path(source).stem)
    description = doc.get("description", "")
    return Scenario(
        name=str(name),
        description=str(description or ""),
        source=source,
        pools=tuple(pools),
        nodes=tuple(nodes),
        queues=queues,
        workloads=tuple(workloads),
        durations=durations,
        steps=tuple(steps),
        projects=tuple(q.name for q in projects),
        departments=tuple(q.name for q in departments),
    )


def _parse_config(where: _Where, raw: Any, base: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    if raw is None:
        return out
    data = where.mapping(raw)
    where.keys(data, POOL_CONFIG_KEYS | ({"name"} if "name" in data else set()))
    if "policy" in data:
        out["policy"] = where.choice(data, "policy", "quota", POLICIES)
    if "placement" in data:
        out["placement"] = where.choice(data, "placement", "binpack", PLACEMENTS)
    for key in ("preemption", "consolidation", "over_quota_weight_from_quota"):
        if key in data:
            out[key] = where.boolean(data, key, False)
    if "max_consolidation_evaluations" in data:
        out["max_consolidation_evaluations"] = where.integer(
            data, "max_consolidation_evaluations", 100
        )
    for key in ("max_reclaims_per_cycle", "max_preemptions_per_cycle"):
        if key in data:  # null: no bound
            out[key] = None if data[key] is None else where.integer(data, key, 100, minimum=1)
    if "min_guaranteed_runtime" in data:
        out["min_guaranteed_runtime"] = where.number(data, "min_guaranteed_runtime", 0.0)
    if "fairshare_mode" in data:
        out["fairshare_mode"] = where.choice(
            data, "fairshare_mode", "point_in_time", FAIRSHARE_MODES
        )
    if "time_based" in data:
        tb_where = where.at(f"{where.entry} time_based".strip())
        tb = tb_where.mapping(data["time_based"], "'time_based'")
        tb_where.keys(tb, TIME_BASED_KEYS)
        if "window" in tb:
            out["time_based_window"] = tb_where.number(tb, "window", None, minimum=0.0)
        if "half_life" in tb:
            out["time_based_half_life"] = tb_where.number(tb, "half_life", None, minimum=0.0)
        if "k" in tb:
            out["time_based_k"] = tb_where.number(tb, "k", None, minimum=0.0)
    return out


def _parse_pools(top: _Where, doc: dict[str, Any], config: dict[str, Any]) -> list[PoolConfig]:
    raw = top.items(doc, "pools")
    if not raw:
        return [PoolConfig(name="default", **config)]
    pools: list[PoolConfig] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = top.at(_entry_name("pools", i, item))
        data = where.mapping(item)
        name = where.string(data, "name")
        if name in seen:
            raise where.fail(f"duplicate pool name {name!r}")
        seen.add(name)
        settings = _parse_config(where, data, config)
        pools.append(PoolConfig(name=name, **settings))
    return pools


def _parse_nodes(top: _Where, doc: dict[str, Any], pools: list[str]) -> list[NodeSpec]:
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(top.items(doc, "nodes")):
        where = top.at(_entry_name("nodes", i, item))
        data = where.mapping(item)
        where.keys(data, NODE_KEYS)
        name = where.string(data, "name")
        pool = where.string(data, "pool", pools[0])
        if pool not in pools:
            raise where.fail(f"'pool' names unknown pool {pool!r} (pools: {', '.join(pools)})")
        gpus = where.req_integer(data, "gpus", 0)
        cpu = where.number(data, "cpu", None)
        memory = where.number(data, "memory", None)
        labels = where.labels(data, "labels")
        state = where.choice(data, "state", "ready", NODE_STATES)
        count = where.integer(data, "count", None, minimum=1)
        names = [name] if count is None else [f"{name}-{k}" for k in range(1, count + 1)]
        for n in names:
            if n in seen:
                raise where.fail(f"duplicate node name {n!r}")
            seen.add(n)
            nodes.append(NodeSpec(n, pool, gpus, cpu, memory, labels, state))
    return nodes


def _resources_by_pool(
    where: _Where, data: dict[str, Any], key: str, pools: list[str], *, limit: bool
) -> dict[str, Resources]:
    raw = data.get(key)
    if raw is None:
        return {}
    per_pool = where.mapping(raw, f"{key!r}")
    out: dict[str, Resources] = {}
    for pool, amounts in per_pool.items():
        if pool not in pools:
            raise where.fail(f"{key!r} names unknown pool {pool!r} (pools: {', '.join(pools)})")
        sub = where.at(f"{where.entry} {key}.{pool}")
        values = sub.mapping(amounts, f"{key!r} of pool {pool!r}")
        sub.keys(values, set(RESOURCE_KEYS))
        gpus = sub.number(values, "gpus", None)
        cpu = sub.number(values, "cpu", None)
        memory = sub.number(values, "memory", None)
        out[pool] = Resources(
            (UNLIMITED if limit else 0.0) if gpus is None else gpus,
            UNLIMITED if cpu is None else cpu,
            UNLIMITED if memory is None else memory,
        )
    return out


def _parse_queues(
    top: _Where, doc: dict[str, Any], pools: list[str]
) -> tuple[list[QueueSpec], list[QueueSpec]]:
    departments: list[QueueSpec] = []
    seen: set[str] = set()
    order = 0
    for i, item in enumerate(top.items(doc, "departments")):
        where = top.at(_entry_name("departments", i, item))
        data = where.mapping(item)
        where.keys(data, QUEUE_KEYS)
        name = where.string(data, "name")
        if name in seen:
            raise where.fail(f"duplicate department name {name!r}")
        seen.add(name)
        departments.append(_queue(where, data, name, None, pools, order))
        order += 1
    projects: list[QueueSpec] = []
    project_names: set[str] = set()
    implicit_department = False
    for i, item in enumerate(top.items(doc, "projects")):
        where = top.at(_entry_name("projects", i, item))
        data = where.mapping(item)
        where.keys(data, QUEUE_KEYS | {"department"})
        name = where.string(data, "name")
        if name in project_names:
            raise where.fail(f"duplicate project name {name!r}")
        if name in seen:
            raise where.fail(f"project name {name!r} is also a department name; use distinct names")
        project_names.add(name)
        if "department" in data:
            dept = where.string(data, "department")
            if dept not in seen:
                known = ", ".join(d.name for d in departments) or "none defined"
                raise where.fail(
                    f"'department' names unknown department {dept!r} (departments: {known})"
                )
        elif len(departments) == 1:
            dept = departments[0].name
        elif not departments:
            dept = "default"
            implicit_department = True
        else:
            raise where.fail("'department' is required when there are several departments")
        projects.append(_queue(where, data, name, dept, pools, order))
        order += 1
    if implicit_department:
        if "default" in project_names:
            raise top.fail("a project named 'default' needs an explicit department")
        departments.append(QueueSpec(name="default", creation_order=order))
    return departments, projects


def _queue(
    where: _Where, data: dict[str, Any], name: str, parent: str | None, pools: list[str], order: int
) -> QueueSpec:
    return QueueSpec(
        name=name,
        parent=parent,
        rank=where.req_integer(data, "rank", 0, minimum=None),
        over_quota_weight=where.req_number(data, "over_quota_weight", 1.0),
        quota=_resources_by_pool(where, data, "quota", pools, limit=False),
        limit=_resources_by_pool(where, data, "limit", pools, limit=True),
        creation_order=order,
    )


def _gpus(where: _Where, data: dict[str, Any]) -> float:
    g = where.req_number(data, "gpus", 0.0)
    if g > 1 and not float(g).is_integer():
        raise where.fail(
            f"'gpus' must be a whole number or a fraction below 1, got {_show(data['gpus'])}"
        )
    return g


def _parse_workload(
    where: _Where,
    item: Any,
    projects: set[str],
    pools: list[str],
    nodes: dict[str, NodeSpec],
    order: int,
    *,
    allow_running: bool,
) -> tuple[WorkloadSpec, float | None]:
    data = where.mapping(item)
    allowed = WORKLOAD_KEYS if allow_running else WORKLOAD_KEYS - {"running_on", "started_at"}
    where.keys(data, allowed)
    name = where.string(data, "name")
    project = where.string(data, "project")
    if project not in projects:
        raise where.fail(
            f"'project' names unknown project {project!r} "
            f"(projects: {', '.join(sorted(projects)) or 'none defined'})"
        )
    kind = where.choice(data, "kind", "training", KINDS)
    priority = where.req_integer(data, "priority", DEFAULT_PRIORITY_BY_KIND[kind], minimum=None)
    preemptible = where.boolean(data, "preemptible", default_preemptible(kind, priority))
    cand = where.items(data, "pools")
    for p in cand:
        if p not in pools:
            raise where.fail(f"'pools' names unknown pool {_show(p)} (pools: {', '.join(pools)})")
    if len(set(cand)) != len(cand):
        raise where.fail("'pools' lists a pool twice")
    if "groups" in data:
        both = sorted(k for k in ("pods", "min_pods", "gpus", "cpu", "memory") if k in data)
        if both:
            raise where.fail(f"{both[0]!r} belongs to each group when 'groups' is given")
        raw_groups = where.items(data, "groups")
        if not raw_groups:
            raise where.fail("'groups' must list at least one group")
        groups = []
        names: set[str] = set()
        for gi, graw in enumerate(raw_groups):
            gw = where.at(f"{where.entry} groups[{gi}]")
            gdata = gw.mapping(graw)
            gw.keys(gdata, GROUP_KEYS)
            gname = gw.string(gdata, "name", f"group-{gi + 1}")
            if gname in names:
                raise gw.fail(f"duplicate group name {gname!r}")
            names.add(gname)
            groups.append(_group(gw, gdata, gname))
    else:
        groups = [_group(where, data, "main")]
    node_selector = where.labels(data, "node_selector")
    weight = where.req_number(data, "weight", 1.0)
    submitted_at = where.req_number(data, "submitted_at", 0.0, minimum=None)
    duration = where.number(data, "duration", None)
    backoff = where.integer(data, "backoff_limit", None)
    pods: tuple[PodPlacement, ...] = ()
    pool: str | None = None
    started_at: float | None = None
    if data.get("running_on") is not None:
        running_on = where.items(data, "running_on")
        pods, pool = _placements(where, running_on, groups, nodes, cand, node_selector)
        started_at = where.req_number(data, "started_at", 0.0, minimum=None)
    elif "started_at" in data:
        raise where.fail("'started_at' needs 'running_on'")
    spec = WorkloadSpec(
        id=name,
        name=name,
        project=project,
        groups=tuple(groups),
        kind=kind,
        priority=priority,
        preemptible=preemptible,
        pools=tuple(str(p) for p in cand),
        node_selector=node_selector,
        weight=weight,
        submitted_at=submitted_at,
        creation_order=order,
        backoff_limit=backoff,
        status=STATUS_RUNNING if pods else "pending",
        pods=pods,
        pool=pool,
        started_at=started_at,
    )
    return spec, duration


def _group(where: _Where, data: dict[str, Any], name: str) -> PodGroupSpec:
    pods = where.req_integer(data, "pods", 1, minimum=1)
    min_pods = where.req_integer(data, "min_pods", pods, minimum=1)
    if min_pods > pods:
        raise where.fail(f"'min_pods' ({min_pods}) must not exceed 'pods' ({pods})")
    request = Resources(
        _gpus(where, data),
        where.req_number(data, "cpu", 0.0),
        where.req_number(data, "memory", 0.0),
    )
    return PodGroupSpec(name=name, pods=pods, min_pods=min_pods, request=request)


def _placements(
    where: _Where,
    running_on: list[Any],
    groups: list[PodGroupSpec],
    nodes: dict[str, NodeSpec],
    cand: list[Any],
    selector: dict[str, str],
) -> tuple[tuple[PodPlacement, ...], str]:
    total = sum(g.pods for g in groups)
    minimum = sum(g.min_pods for g in groups)
    if not (minimum <= len(running_on) <= total):
        raise where.fail(
            f"'running_on' must list between {minimum} and {total} nodes (one per pod), "
            f"got {len(running_on)}"
        )
    placements: list[PodPlacement] = []
    index = 0
    for g in groups:
        take = min(g.pods, len(running_on) - index)
        for _ in range(take):
            node = running_on[index]
            if not isinstance(node, str) or node not in nodes:
                raise where.fail(f"'running_on' names unknown node {_show(node)}")
            placements.append(PodPlacement(g.name, node))
            index += 1
        if take < g.min_pods:
            raise where.fail(
                f"'running_on' leaves group {g.name!r} below its min_pods ({g.min_pods})"
            )
    pools = {nodes[p.node].pool for p in placements}
    if len(pools) > 1:
        raise where.fail(
            f"'running_on' spans several pools ({', '.join(sorted(pools))}); a workload runs in one"
        )
    pool = pools.pop()
    if cand and pool not in cand:
        raise where.fail(f"'running_on' uses pool {pool!r}, which is not among its 'pools'")
    for p in placements:
        labels = nodes[p.node].labels
        if any(labels.get(k) != v for k, v in selector.items()):
            raise where.fail(f"'running_on' node {p.node!r} does not match its node_selector")
    return tuple(placements), pool


def _check_initial_capacity(
    top: _Where, workloads: list[WorkloadSpec], nodes: dict[str, NodeSpec]
) -> None:
    used: dict[str, list[float]] = {}
    for i, w in enumerate(workloads):
        for p in w.pods:
            g = next(x for x in w.groups if x.name == p.group)
            u = used.setdefault(p.node, [0.0, 0.0, 0.0])
            u[0] += g.request.gpus
            u[1] += g.request.cpu
            u[2] += g.request.memory
            cap = nodes[p.node].capacity()
            for k, label in enumerate(("GPUs", "CPU", "memory")):
                if u[k] > cap.as_tuple()[k] + 1e-9:
                    where = top.at(_entry_name("workloads", i, {"name": w.id}))
                    raise where.fail(
                        f"'running_on' puts more {label} on node {p.node!r} than it has "
                        f"({u[k]:g} > {cap.as_tuple()[k]:g})"
                    )


def _parse_steps(
    top: _Where,
    doc: dict[str, Any],
    known: set[str],
    projects: set[str],
    departments: set[str],
    pools: list[str],
    nodes: dict[str, NodeSpec],
) -> list[Step]:
    steps: list[Step] = []
    last_at: float | None = None
    order = len(known)
    for i, item in enumerate(top.items(doc, "steps")):
        where = top.at(f"steps[{i}]")
        data = where.mapping(item)
        where.keys(data, {"at", "events", "expect"})
        if "at" not in data:
            raise where.fail("'at' is required")
        at = where.req_number(data, "at", 0.0)
        where = top.at(f"steps[{i}] (at {at:g})")
        if last_at is not None and at < last_at:
            raise where.fail(
                f"steps must be in increasing time order; 'at' {at:g} comes after {last_at:g}"
            )
        last_at = at
        events: list[Event] = []
        for j, raw in enumerate(where.items(data, "events")):
            ew = top.at(f"steps[{i}] (at {at:g}) events[{j}]")
            event = _parse_event(ew, raw, known, projects, departments, pools, nodes, order)
            if event.type == "submit":
                order += 1
            events.append(event)
        expect = _parse_expect(
            top.at(f"steps[{i}] (at {at:g}) expect"),
            data.get("expect"),
            known,
            projects | departments,
            pools,
        )
        steps.append(Step(index=i, at=at, events=tuple(events), expect=expect))
    return steps


def _parse_event(
    where: _Where,
    raw: Any,
    known: set[str],
    projects: set[str],
    departments: set[str],
    pools: list[str],
    nodes: dict[str, NodeSpec],
    order: int,
) -> Event:
    data = where.mapping(raw, "an event")
    if len(data) != 1:
        raise where.fail(
            f"an event has exactly one of {', '.join(EVENT_TYPES)}, "
            f"got {', '.join(data) or 'nothing'}"
        )
    kind, value = next(iter(data.items()))
    if kind not in EVENT_TYPES:
        raise where.fail(f"unknown event {kind!r} (events: {', '.join(EVENT_TYPES)})")
    where = where.at(f"{where.entry} ({kind})")
    if kind == "submit":
        spec, duration = _parse_workload(
            where, value, projects, pools, nodes, order, allow_running=False
        )
        if spec.id in known:
            raise where.fail(f"duplicate workload name {spec.id!r}")
        known.add(spec.id)
        return Event("submit", spec.id, workload=spec, duration=duration)
    if kind in ("finish", "fail", "delete"):
        name = value if isinstance(value, str) else None
        if name is None or name not in known:
            raise where.fail(f"names unknown workload {_show(value)}")
        return Event(kind, name)
    if kind in ("node_down", "node_up"):
        if not isinstance(value, str) or value not in nodes:
            raise where.fail(f"names unknown node {_show(value)}")
        return Event(kind, value)
    body = where.mapping(value, f"{kind!r}")
    if kind == "set_priority":
        where.keys(body, {"workload", "priority"})
        name = where.string(body, "workload")
        if name not in known:
            raise where.fail(f"'workload' names unknown workload {name!r}")
        if "priority" not in body:
            raise where.fail("'priority' is required")
        return Event(
            kind, name, values={"priority": where.integer(body, "priority", 0, minimum=None)}
        )
    if kind == "set_quota":
        where.keys(body, {"project", "department", "pool", *RESOURCE_KEYS})
        target = _queue_target(where, body, projects, departments)
        pool = where.string(body, "pool", pools[0] if len(pools) == 1 else None)
        if pool not in pools:
            raise where.fail(f"'pool' names unknown pool {pool!r}")
        amounts = {k: where.number(body, k, None) for k in RESOURCE_KEYS if k in body}
        if not amounts:
            raise where.fail("give at least one of gpus, cpu, memory")
        return Event(kind, target, values={"pool": pool, "amounts": amounts})
    # set_weight
    if "workload" in body:
        where.keys(body, {"workload", "weight"})
        name = where.string(body, "workload")
        if name not in known:
            raise where.fail(f"'workload' names unknown workload {name!r}")
        if "weight" not in body:
            raise where.fail("'weight' is required")
        return Event(
            kind, name, values={"weight": where.number(body, "weight", 1.0), "scope": "workload"}
        )
    where.keys(body, {"project", "department", "over_quota_weight"})
    target = _queue_target(where, body, projects, departments)
    if "over_quota_weight" not in body:
        raise where.fail("'over_quota_weight' is required")
    return Event(
        kind,
        target,
        values={
            "over_quota_weight": where.number(body, "over_quota_weight", 1.0),
            "scope": "queue",
        },
    )


def _queue_target(
    where: _Where, body: dict[str, Any], projects: set[str], departments: set[str]
) -> str:
    if "project" in body and "department" in body:
        raise where.fail("give either 'project' or 'department', not both")
    if "project" in body:
        name = where.string(body, "project")
        if name not in projects:
            raise where.fail(f"'project' names unknown project {name!r}")
        return name
    if "department" in body:
        name = where.string(body, "department")
        if name not in departments:
            raise where.fail(f"'department' names unknown department {name!r}")
        return name
    raise where.fail("'project' (or 'department') is required")


def _parse_expect(
    where: _Where, raw: Any, known: set[str], queues: set[str], pools: list[str]
) -> Expect | None:
    if raw is None:
        return None
    data = where.mapping(raw, "'expect'")
    where.keys(data, EXPECT_KEYS)
    lists: dict[str, tuple[str, ...] | None] = {}
    for key in EXPECT_LISTS:
        if key not in data:
            lists[key] = None
            continue
        items = data[key]
        if items is None:
            items = []
        if not isinstance(items, list):
            raise where.fail(f"{key!r} must be a list of workload names, got {_show(items)}")
        for n in items:
            if not isinstance(n, str) or n not in known:
                raise where.fail(f"{key!r} names unknown workload {_show(n)}")
        lists[key] = tuple(items)
    pods = None
    if "pods" in data:
        pmap = where.mapping(data["pods"], "'pods'")
        pods = {}
        for n, c in pmap.items():
            if n not in known:
                raise where.fail(f"'pods' names unknown workload {n!r}")
            if isinstance(c, bool) or not isinstance(c, int) or c < 0:
                raise where.fail(f"'pods' of {n!r} must be a whole number >= 0, got {_show(c)}")
            pods[n] = c
    figures = {}
    for key in ("allocated", "fairshare"):
        if key not in data:
            figures[key] = None
            continue
        qmap = where.mapping(data[key], f"{key!r}")
        out: dict[str, dict[str, dict[str, float]]] = {}
        for qname, per_pool in qmap.items():
            if qname not in queues:
                raise where.fail(f"{key!r} names unknown project or department {qname!r}")
            pmap2 = where.mapping(per_pool, f"{key!r} of {qname!r}")
            out[qname] = {}
            for pool, amounts in pmap2.items():
                if pool not in pools:
                    raise where.fail(f"{key!r} of {qname!r} names unknown pool {pool!r}")
                sub = where.at(f"{where.entry} {key}.{qname}.{pool}")
                amap = sub.mapping(amounts, f"{key!r} of {qname!r} in {pool!r}")
                sub.keys(amap, set(RESOURCE_KEYS))
                out[qname][pool] = {r: float(sub.req_number(amap, r, 0.0)) for r in amap}
        figures[key] = out
    return Expect(
        running=lists["running"],
        pending=lists["pending"],
        completed=lists["completed"],
        failed=lists["failed"],
        only=where.boolean(data, "only", False),
        pods=pods,
        preempted=lists["preempted"],
        moved=lists["moved"],
        allocated=figures["allocated"],
        fairshare=figures["fairshare"],
    )
