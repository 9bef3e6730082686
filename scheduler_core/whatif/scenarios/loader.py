"""Load a scenario (YAML or JSON, FORMAT.md v1.1) into engine objects.

The file's shape is checked by the schema (`scheduler_core.schemas.scenarios`); this module
then checks what the schema cannot (names that refer to pools, projects, nodes and
workloads; initial placements) and builds the engine's dataclasses. Every problem becomes a
ScenarioError naming the file, the entry and the field; no traceback ever reaches a user.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from scheduler_core.engine.profiles import with_profile
from scheduler_core.engine.resources import UNLIMITED, Resources
from scheduler_core.engine.snapshot import (
    STATUS_RUNNING,
    NodeSpec,
    PodGroupSpec,
    PodPlacement,
    PoolConfig,
    QueueSpec,
    WorkloadSpec,
)
from scheduler_core.schemas.base import counted_names, show
from scheduler_core.schemas.errors import SchemaInvalid, validate
from scheduler_core.schemas.pools import PoolRules, ScenarioConfig
from scheduler_core.schemas.scenarios import (
    Amounts,
    InitialWorkload,
    ScenarioDocument,
    ScenarioEvent,
    ScenarioProject,
    ScenarioQueue,
    ScenarioStep,
    ScenarioWorkload,
    SetQuota,
    SetWeight,
)
from scheduler_core.schemas.scenarios import Expect as ExpectEntry
from scheduler_core.whatif.scenarios.errors import ScenarioError
from scheduler_core.whatif.scenarios.model import Event, Expect, Scenario, Step

EXPECT_LISTS = ("running", "pending", "completed", "failed", "preempted", "moved")


class _At:
    """An entry of the file, for error messages: "scenario.yaml: workloads[3] (name 'w4')"."""

    def __init__(self, source: str, entry: str = "") -> None:
        self.source = source
        self.entry = entry

    def at(self, entry: str) -> _At:
        return _At(self.source, entry)

    def fail(self, message: str) -> ScenarioError:
        where = f"{self.source}: {self.entry}: " if self.entry else f"{self.source}: "
        return ScenarioError(where + message)


def _entry(path: Sequence[str | int], data: Any) -> str:
    """An entry named as a reader finds it: "steps[0] (at 0) events[1] (finish)"."""
    words: list[str] = []
    skip = None
    for part in path:
        if part == skip:
            continue
        skip = None
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and part < len(data) else None
            label = f"[{part}]"
            if isinstance(data, dict) and "name" in data:
                label += f" (name {str(data['name'])!r})"
            elif isinstance(data, dict) and "at" in data and isinstance(data["at"], int | float):
                label += f" (at {data['at']:g})"
            elif isinstance(data, dict) and len(data) == 1 and words[-1] == "events":
                skip = next(iter(data))
                label += f" ({skip})"
                data = data[skip]
            words[-1] += label
        else:
            data = data.get(part) if isinstance(data, dict) else None
            words.append(str(part))
    return " ".join(words)


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
    top = _At(source)
    try:
        doc = validate(ScenarioDocument, data)
    except SchemaInvalid as exc:
        problem = exc.problems[0]
        raise top.at(_entry(problem.owner, data)).fail(problem.sentence) from None
    return _Builder(top, doc).scenario()


def _entry_name(kind: str, index: int, name: str) -> str:
    return f"{kind}[{index}] (name {name!r})"


def _pool_settings(settings: ScenarioConfig | None) -> dict[str, Any]:
    """PoolConfig's keyword arguments for the settings a config or pool entry states."""
    if settings is None:
        return {}
    given = settings.model_dump(include=set(PoolRules.model_fields) & settings.model_fields_set)
    time_based = settings.time_based.given() if settings.time_based else {}
    return with_profile(given) | {f"time_based_{k}": v for k, v in time_based.items()}


def _resources(per_pool: dict[str, Amounts] | None, *, limit: bool) -> dict[str, Resources]:
    out: dict[str, Resources] = {}
    for pool, a in (per_pool or {}).items():
        out[pool] = Resources(
            (UNLIMITED if limit else 0.0) if a.gpus is None else a.gpus,
            UNLIMITED if a.cpu is None else a.cpu,
            UNLIMITED if a.memory is None else a.memory,
        )
    return out


class _Builder:
    """Checks the references of a well-shaped scenario and builds its engine objects."""

    def __init__(self, top: _At, doc: ScenarioDocument) -> None:
        self.top = top
        self.doc = doc
        self.source = top.source

    def scenario(self) -> Scenario:
        doc = self.doc
        self.pools = self._pools()
        self.pool_names = [p.name for p in self.pools]
        self.nodes = self._nodes()
        departments, projects = self._queues()
        self.projects = {q.name for q in projects}
        self.departments = {q.name for q in departments}
        self.known: set[str] = set()
        workloads: list[WorkloadSpec] = []
        durations: dict[str, float | None] = {}
        for i, item in enumerate(doc.workloads or []):
            where = self.top.at(_entry_name("workloads", i, item.name))
            spec = self._workload(where, item, i)
            workloads.append(spec)
            durations[spec.id] = item.duration
        self._check_initial_capacity(workloads)
        steps = self._steps()
        return Scenario(
            name=doc.name or Path(self.source).stem,
            description=doc.description or "",
            source=self.source,
            pools=tuple(self.pools),
            nodes=tuple(self.nodes.values()),
            queues=tuple(departments + projects),
            workloads=tuple(workloads),
            durations=durations,
            steps=tuple(steps),
            projects=tuple(q.name for q in projects),
            departments=tuple(q.name for q in departments),
        )

    # --- cluster ------------------------------------------------------------------------

    def _pools(self) -> list[PoolConfig]:
        config = _pool_settings(self.doc.config)
        if not self.doc.pools:
            return [PoolConfig(name="default", **config)]
        pools: list[PoolConfig] = []
        seen: set[str] = set()
        for i, item in enumerate(self.doc.pools):
            if item.name in seen:
                raise self.top.at(_entry_name("pools", i, item.name)).fail(
                    f"duplicate pool name {item.name!r}"
                )
            seen.add(item.name)
            pools.append(PoolConfig(name=item.name, **(config | _pool_settings(item))))
        return pools

    def _nodes(self) -> dict[str, NodeSpec]:
        nodes: dict[str, NodeSpec] = {}
        pools = self.pool_names
        for i, item in enumerate(self.doc.nodes or []):
            where = self.top.at(_entry_name("nodes", i, item.name))
            pool = item.pool if item.pool is not None else pools[0]
            if pool not in pools:
                raise where.fail(f"'pool' names unknown pool {pool!r} (pools: {', '.join(pools)})")
            for n in counted_names(item.name, item.count):
                if n in nodes:
                    raise where.fail(f"duplicate node name {n!r}")
                nodes[n] = NodeSpec(
                    n, pool, item.gpus, item.cpu, item.memory, item.labels or {}, item.state
                )
        return nodes

    def _queues(self) -> tuple[list[QueueSpec], list[QueueSpec]]:
        departments: list[QueueSpec] = []
        order = 0
        for i, item in enumerate(self.doc.departments or []):
            where = self.top.at(_entry_name("departments", i, item.name))
            if any(d.name == item.name for d in departments):
                raise where.fail(f"duplicate department name {item.name!r}")
            departments.append(self._queue(where, item, None, order))
            order += 1
        dept_names = {d.name for d in departments}
        projects: list[QueueSpec] = []
        implicit_department = False
        for i, item in enumerate(self.doc.projects or []):
            where = self.top.at(_entry_name("projects", i, item.name))
            if any(p.name == item.name for p in projects):
                raise where.fail(f"duplicate project name {item.name!r}")
            if item.name in dept_names:
                raise where.fail(
                    f"project name {item.name!r} is also a department name; use distinct names"
                )
            dept = self._department_of(where, item, departments)
            implicit_department |= dept == "default" and not departments
            projects.append(self._queue(where, item, dept, order))
            order += 1
        if implicit_department:
            if any(p.name == "default" for p in projects):
                raise self.top.fail("a project named 'default' needs an explicit department")
            departments.append(QueueSpec(name="default", creation_order=order))
        return departments, projects

    @staticmethod
    def _department_of(where: _At, item: ScenarioProject, departments: list[QueueSpec]) -> str:
        if item.department is not None:
            if not any(d.name == item.department for d in departments):
                known = ", ".join(d.name for d in departments) or "none defined"
                raise where.fail(
                    f"'department' names unknown department {item.department!r} "
                    f"(departments: {known})"
                )
            return item.department
        if len(departments) == 1:
            return departments[0].name
        if not departments:
            return "default"
        raise where.fail("'department' is required when there are several departments")

    def _queue(self, where: _At, item: ScenarioQueue, parent: str | None, order: int) -> QueueSpec:
        for key in ("quota", "limit"):
            for pool in getattr(item, key) or {}:
                if pool not in self.pool_names:
                    raise where.fail(
                        f"{key!r} names unknown pool {pool!r} (pools: {', '.join(self.pool_names)})"
                    )
        return QueueSpec(
            name=item.name,
            parent=parent,
            rank=item.rank,
            over_quota_weight=item.over_quota_weight,
            quota=_resources(item.quota, limit=False),
            limit=_resources(item.limit, limit=True),
            creation_order=order,
        )

    # --- workloads ----------------------------------------------------------------------

    def _workload(self, where: _At, item: ScenarioWorkload, order: int) -> WorkloadSpec:
        cand = self._checked_names(where, item)
        groups = [
            PodGroupSpec(
                name=g.name or "main",
                pods=g.pods,
                min_pods=g.gang,
                request=Resources(g.gpus, g.cpu, g.memory),
            )
            for g in item.pod_groups()
        ]
        selector = item.node_selector or {}
        pods: tuple[PodPlacement, ...] = ()
        pool: str | None = None
        started_at: float | None = None
        pending_since = room_wait_since = None
        preemptions = quick_evictions = 0
        if isinstance(item, InitialWorkload):
            pending_since, room_wait_since = item.pending_since, item.room_wait_since
            preemptions, quick_evictions = item.preemptions, item.quick_evictions
            if item.running_on is not None:
                pods, pool = self._placements(where, item.running_on, groups, cand, selector)
                started_at = item.started_at or 0.0
        priority, preemptible = item.priority_and_preemptible()
        self.known.add(item.name)
        return WorkloadSpec(
            id=item.name,
            name=item.name,
            project=item.project,
            groups=tuple(groups),
            kind=item.kind,
            priority=priority,
            preemptible=preemptible,
            pools=tuple(cand),
            node_selector=selector,
            weight=item.weight,
            submitted_at=item.submitted_at,
            creation_order=order,
            backoff_limit=item.backoff_limit,
            status=STATUS_RUNNING if pods else "pending",
            pods=pods,
            pool=pool,
            started_at=started_at,
            pending_since=pending_since,
            room_wait_since=room_wait_since,
            preemptions=preemptions,
            quick_evictions=quick_evictions,
        )

    def _checked_names(self, where: _At, item: ScenarioWorkload) -> list[str]:
        """Check a workload's name (new), project and pools (known, each once); its
        candidate pools."""
        if item.name in self.known:
            raise where.fail(f"duplicate workload name {item.name!r}")
        if item.project not in self.projects:
            raise where.fail(
                f"'project' names unknown project {item.project!r} "
                f"(projects: {', '.join(sorted(self.projects)) or 'none defined'})"
            )
        cand = item.pools or []
        for p in cand:
            if p not in self.pool_names:
                raise where.fail(
                    f"'pools' names unknown pool {show(p)} (pools: {', '.join(self.pool_names)})"
                )
        if len(set(cand)) != len(cand):
            raise where.fail("'pools' lists a pool twice")
        return cand

    def _placements(
        self,
        where: _At,
        running_on: list[Any],
        groups: list[PodGroupSpec],
        cand: list[str],
        selector: dict[str, str],
    ) -> tuple[tuple[PodPlacement, ...], str]:
        nodes = self.nodes
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
                    raise where.fail(f"'running_on' names unknown node {show(node)}")
                placements.append(PodPlacement(g.name, node))
                index += 1
            if take < g.min_pods:
                raise where.fail(
                    f"'running_on' leaves group {g.name!r} below its min_pods ({g.min_pods})"
                )
        pools = {nodes[p.node].pool for p in placements}
        if len(pools) > 1:
            raise where.fail(
                f"'running_on' spans several pools ({', '.join(sorted(pools))}); "
                "a workload runs in one"
            )
        pool = pools.pop()
        if cand and pool not in cand:
            raise where.fail(f"'running_on' uses pool {pool!r}, which is not among its 'pools'")
        for p in placements:
            labels = nodes[p.node].labels
            if any(labels.get(k) != v for k, v in selector.items()):
                raise where.fail(f"'running_on' node {p.node!r} does not match its node_selector")
        return tuple(placements), pool

    def _check_initial_capacity(self, workloads: list[WorkloadSpec]) -> None:
        used: dict[str, list[float]] = {}
        for i, w in enumerate(workloads):
            for p in w.pods:
                g = next(x for x in w.groups if x.name == p.group)
                u = used.setdefault(p.node, [0.0, 0.0, 0.0])
                u[0] += g.request.gpus
                u[1] += g.request.cpu
                u[2] += g.request.memory
                cap = self.nodes[p.node].capacity().as_tuple()
                for k, label in enumerate(("GPUs", "CPU", "memory")):
                    if u[k] > cap[k] + 1e-9:
                        raise self.top.at(_entry_name("workloads", i, w.id)).fail(
                            f"'running_on' puts more {label} on node {p.node!r} than it has "
                            f"({u[k]:g} > {cap[k]:g})"
                        )

    # --- steps --------------------------------------------------------------------------

    def _steps(self) -> list[Step]:
        steps: list[Step] = []
        last_at: float | None = None
        order = len(self.known)
        for i, item in enumerate(self.doc.steps or []):
            step = f"steps[{i}] (at {item.at:g})"
            if last_at is not None and item.at < last_at:
                raise self.top.at(step).fail(
                    f"steps must be in increasing time order; 'at' {item.at:g} comes after "
                    f"{last_at:g}"
                )
            last_at = item.at
            events: list[Event] = []
            for j, raw in enumerate(item.events or []):
                where = self.top.at(f"{step} events[{j}] ({raw.type})")
                events.append(self._event(where, raw, order))
                order += raw.type == "submit"
            expect = self._expect(self.top.at(f"{step} expect"), item)
            steps.append(Step(index=i, at=item.at, events=tuple(events), expect=expect))
        return steps

    def _event(self, where: _At, raw: ScenarioEvent, order: int) -> Event:
        kind = raw.type
        value = getattr(raw, kind)
        if kind == "submit":
            spec = self._workload(where, value, order)
            return Event("submit", spec.id, workload=spec, duration=value.duration)
        if kind in ("finish", "fail", "delete"):
            if value not in self.known:
                raise where.fail(f"names unknown workload {show(value)}")
            return Event(kind, value)
        if kind in ("node_down", "node_up"):
            if value not in self.nodes:
                raise where.fail(f"names unknown node {show(value)}")
            return Event(kind, value)
        if kind == "set_priority":
            self._workload_named(where, value.workload)
            return Event(kind, value.workload, values={"priority": value.priority})
        if kind == "set_quota":
            return self._set_quota(where, value)
        return self._set_weight(where, value)

    def _set_quota(self, where: _At, value: SetQuota) -> Event:
        target = self._queue_target(where, value)
        pool = value.pool
        if pool is None and len(self.pool_names) == 1:
            pool = self.pool_names[0]
        if pool is None:
            raise where.fail("'pool' is required")
        if pool not in self.pool_names:
            raise where.fail(f"'pool' names unknown pool {pool!r}")
        amounts = {k: v for k, v in value.given().items() if k in ("gpus", "cpu", "memory")}
        if not amounts:
            raise where.fail("give at least one of gpus, cpu, memory")
        return Event("set_quota", target, values={"pool": pool, "amounts": amounts})

    def _set_weight(self, where: _At, value: SetWeight) -> Event:
        """set_weight: a workload's weight, or a queue's over-quota weight."""
        if value.workload is not None:
            if value.weight is None:
                raise where.fail("'weight' is required")
            if value.given().keys() != {"workload", "weight"}:
                raise where.fail("a workload's set_weight gives only 'workload' and 'weight'")
            self._workload_named(where, value.workload)
            values = {"weight": value.weight, "scope": "workload"}
            return Event("set_weight", value.workload, values=values)
        target = self._queue_target(where, value)
        if value.over_quota_weight is None:
            raise where.fail("'over_quota_weight' is required")
        if value.weight is not None:
            raise where.fail(
                "'weight' is a workload's; a queue's set_weight gives 'over_quota_weight'"
            )
        return Event(
            "set_weight",
            target,
            values={"over_quota_weight": value.over_quota_weight, "scope": "queue"},
        )

    def _workload_named(self, where: _At, name: str) -> None:
        if name not in self.known:
            raise where.fail(f"'workload' names unknown workload {name!r}")

    def _queue_target(self, where: _At, body: Any) -> str:
        if body.project is not None and body.department is not None:
            raise where.fail("give either 'project' or 'department', not both")
        if body.project is not None:
            if body.project not in self.projects:
                raise where.fail(f"'project' names unknown project {body.project!r}")
            return body.project
        if body.department is not None:
            if body.department not in self.departments:
                raise where.fail(f"'department' names unknown department {body.department!r}")
            return body.department
        raise where.fail("'project' (or 'department') is required")

    def _expect(self, where: _At, step: ScenarioStep) -> Expect | None:
        data: ExpectEntry | None = step.expect
        if data is None:
            return None
        lists: dict[str, tuple[str, ...] | None] = {}
        for key in EXPECT_LISTS:
            items = getattr(data, key)
            if items is None:
                lists[key] = () if key in data.model_fields_set else None
                continue
            for n in items:
                if not isinstance(n, str) or n not in self.known:
                    raise where.fail(f"{key!r} names unknown workload {show(n)}")
            lists[key] = tuple(items)
        for n in data.pods or {}:
            if n not in self.known:
                raise where.fail(f"'pods' names unknown workload {n!r}")
        figures: dict[str, dict[str, dict[str, dict[str, float]]] | None] = {}
        queues = self.projects | self.departments
        for key in ("allocated", "fairshare"):
            per_queue = getattr(data, key)
            if per_queue is None:
                figures[key] = None
                continue
            out: dict[str, dict[str, dict[str, float]]] = {}
            for qname, per_pool in per_queue.items():
                if qname not in queues:
                    raise where.fail(f"{key!r} names unknown project or department {qname!r}")
                out[qname] = {}
                for pool, amounts in per_pool.items():
                    if pool not in self.pool_names:
                        raise where.fail(f"{key!r} of {qname!r} names unknown pool {pool!r}")
                    out[qname][pool] = {
                        r: v for r, v in amounts.model_dump(exclude_none=True).items()
                    }
            figures[key] = out
        return Expect(
            running=lists["running"],
            pending=lists["pending"],
            completed=lists["completed"],
            failed=lists["failed"],
            only=data.only,
            pods=dict(data.pods) if data.pods is not None else None,
            preempted=lists["preempted"],
            moved=lists["moved"],
            allocated=figures["allocated"],
            fairshare=figures["fairshare"],
        )
