"""What a what-if run tells an admin: per project GPUs held (mean over time and at the end),
time spent pending, preemptions; and between a baseline and a changed run, who gains and
who gets reclaimed.

Input is the simulator's per-step output (FORMAT.md, `--json`): {"at", "workloads":
{name: {"status", "pods", "nodes"}}, "queues": {queue: {pool: {"allocated": {"gpus"}}}},
"events": [{"at", "type", "workload", "reason"}]}.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

OTHER_PROJECTS = "(other projects)"
MAX_TIMELINE_POINTS = 240
MAX_EVENTS = 200
GPU_EPSILON = 0.05
PENDING_EPSILON = 1.0
SUMMED_FIELDS = (
    "mean_gpus",
    "final_gpus",
    "peak_gpus",
    "preemptions",
    "workloads",
    "running",
    "pending",
    "completed",
    "failed",
)


def scenario_index(scenario: dict[str, Any]) -> dict[str, Any]:
    """Project of every workload (initial and submitted later), departments, GPU capacity."""
    project_of: dict[str, str] = {}
    gpus_per_pod: dict[str, float] = {}

    def add(spec: dict[str, Any]) -> None:
        name = spec.get("name")
        if not name:
            return
        project_of[name] = spec.get("project", "")
        groups = spec.get("groups")
        if groups:
            pods = sum(g.get("pods", 1) for g in groups) or 1
            gpus_per_pod[name] = sum(g.get("pods", 1) * g.get("gpus", 0) for g in groups) / pods
        else:
            gpus_per_pod[name] = float(spec.get("gpus", 0) or 0)

    for spec in scenario.get("workloads") or []:
        add(spec)
    for step in scenario.get("steps") or []:
        for event in step.get("events") or []:
            if isinstance(event, dict) and isinstance(event.get("submit"), dict):
                add(event["submit"])
    departments = {p["name"]: p.get("department", "") for p in scenario.get("projects") or []}
    projects = list(departments) + sorted(
        {p for p in project_of.values() if p and p not in departments}
    )
    removed = {
        e["node_down"]
        for step in (scenario.get("steps") or [])[:1]
        if step.get("at", 0) == 0
        for e in step.get("events") or []
        if isinstance(e, dict) and "node_down" in e
    }
    capacity = 0.0
    for node in scenario.get("nodes") or []:
        count = int(node.get("count", 1) or 1)
        if node.get("name") not in removed:
            capacity += float(node.get("gpus", 0) or 0) * count
    return {
        "project_of": project_of,
        "gpus_per_pod": gpus_per_pod,
        "departments": departments,
        "projects": projects,
        "capacity_gpus": capacity,
    }


def _allocated(step: dict[str, Any], index: dict[str, Any]) -> dict[str, float]:
    """GPUs each project holds at a step: from its queues, else from its running pods."""
    queues = step.get("queues") or {}
    held: dict[str, float] = {}
    for project in index["projects"]:
        if project in queues:
            held[project] = sum(
                float(((pool or {}).get("allocated") or {}).get("gpus", 0) or 0)
                for pool in queues[project].values()
            )
    for name, state in (step.get("workloads") or {}).items():
        project = index["project_of"].get(name)
        if project and project not in queues and state.get("status") == "running":
            pods = state.get("pods") or 0
            held[project] = held.get(project, 0.0) + pods * index["gpus_per_pod"].get(name, 0)
    return held


def run_metrics(steps: list[dict[str, Any]], *, scenario: dict[str, Any]) -> dict[str, Any]:
    """Per-project and cluster figures of one run (steps in time order)."""
    index = scenario_index(scenario)
    times = [float(s.get("at", 0)) for s in steps]
    spans = [max(times[i + 1] - times[i], 0.0) for i in range(len(times) - 1)] + [0.0]
    total_time = sum(spans)
    held_series = [_allocated(s, index) for s in steps]
    projects = list(index["projects"])
    for held in held_series:
        projects.extend(p for p in held if p not in projects)
    pending_seconds, seen = _pending_times(steps, spans)
    events = [e for s in steps for e in s.get("events") or []]
    project_of = index["project_of"]
    preempted = Counter(
        project_of.get(e.get("workload"), "") for e in events if e.get("type") == "preempted"
    )
    per_project: dict[str, dict[str, Any]] = {}
    for project in projects:
        series = [held.get(project, 0.0) for held in held_series]
        names = [n for n in seen if project_of.get(n) == project]
        per_project[project] = {
            "department": index["departments"].get(project, ""),
            **_held_figures(series, spans, total_time),
            **_wait_figures([pending_seconds[n] for n in names]),
            "preemptions": preempted.get(project, 0),
            "workloads": len(names),
            **_status_counts(seen[n] for n in names),
        }
    return {
        "start": times[0] if times else 0.0,
        "end": times[-1] if times else 0.0,
        "steps": len(steps),
        "projects": per_project,
        "cluster": _cluster_figures(held_series, spans, total_time, index, events, seen),
        "timeline": _timeline(times, held_series, projects),
        "expectations": _expectations(steps),
        "events": events[-MAX_EVENTS:],
        "events_total": len(events),
    }


def _pending_times(
    steps: list[dict[str, Any]], spans: list[float]
) -> tuple[dict[str, float], dict[str, str]]:
    """Seconds each workload spent pending, and the status each was last seen in."""
    pending_seconds: dict[str, float] = defaultdict(float)
    seen: dict[str, str] = {}
    for step, span in zip(steps, spans, strict=True):
        for name, state in (step.get("workloads") or {}).items():
            seen[name] = state.get("status", "")
            if state.get("status") == "pending":
                pending_seconds[name] += span
    return pending_seconds, seen


def _held_figures(series: list[float], spans: list[float], total_time: float) -> dict[str, float]:
    return {
        "mean_gpus": _mean(series, spans, total_time),
        "final_gpus": round(series[-1], 3) if series else 0.0,
        "peak_gpus": round(max(series), 3) if series else 0.0,
    }


def _wait_figures(waits: list[float]) -> dict[str, float]:
    return {
        "mean_pending_seconds": round(sum(waits) / len(waits), 1) if waits else 0.0,
        "max_pending_seconds": round(max(waits), 1) if waits else 0.0,
    }


def _status_counts(statuses: Iterable[str]) -> dict[str, int]:
    counts = Counter(statuses)
    return {s: counts.get(s, 0) for s in ("running", "pending", "completed", "failed")}


def _cluster_figures(
    held_series: list[dict[str, float]],
    spans: list[float],
    total_time: float,
    index: dict[str, Any],
    events: list[dict[str, Any]],
    seen: dict[str, str],
) -> dict[str, Any]:
    cluster_series = [sum(held.values()) for held in held_series]
    capacity = index["capacity_gpus"]
    mean_gpus = _mean(cluster_series, spans, total_time)
    return {
        "capacity_gpus": capacity,
        "mean_gpus": mean_gpus,
        "final_gpus": round(cluster_series[-1], 3) if cluster_series else 0.0,
        "mean_utilization": round(mean_gpus / capacity, 4) if capacity else 0.0,
        "preemptions": sum(1 for e in events if e.get("type") == "preempted"),
        "moves": sum(1 for e in events if e.get("type") == "moved"),
        "completed": sum(1 for s in seen.values() if s == "completed"),
        "pending_at_end": sum(1 for s in seen.values() if s == "pending"),
    }


def _expectations(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "checked": sum(1 for s in steps if "expect_failures" in s),
        "failed": [
            {"step": s.get("step"), "at": s.get("at"), "failures": s["expect_failures"]}
            for s in steps
            if s.get("expect_failures")
        ],
    }


def _mean(series: list[float], spans: list[float], total_time: float) -> float:
    """Time-weighted mean of a step function (each value holds until the next step)."""
    if not series:
        return 0.0
    if total_time <= 0:
        return round(series[-1], 3)
    return round(sum(v * s for v, s in zip(series, spans, strict=True)) / total_time, 3)


def _timeline(
    times: list[float], held_series: list[dict[str, float]], projects: list[str]
) -> dict[str, Any]:
    """GPUs held per project over time, thinned to at most MAX_TIMELINE_POINTS (for charts)."""
    every = max(1, -(-len(times) // MAX_TIMELINE_POINTS))
    picked = list(range(0, len(times), every))
    if times and picked[-1] != len(times) - 1:
        picked.append(len(times) - 1)
    return {
        "at": [times[i] for i in picked],
        "projects": {p: [round(held_series[i].get(p, 0.0), 3) for i in picked] for p in projects},
    }


def compare_runs(baseline: dict[str, Any], changed: dict[str, Any]) -> dict[str, Any]:
    """Per-project deltas, and the projects that gain or get reclaimed, biggest first."""
    rows: dict[str, dict[str, Any]] = {}
    for project in list(baseline["projects"]) + [
        p for p in changed["projects"] if p not in baseline["projects"]
    ]:
        before = baseline["projects"].get(project) or _empty_row()
        after = changed["projects"].get(project) or _empty_row()
        rows[project] = {
            "department": before.get("department") or after.get("department", ""),
            "mean_gpus": _delta(before, after, "mean_gpus"),
            "final_gpus": _delta(before, after, "final_gpus"),
            "mean_pending_seconds": _delta(before, after, "mean_pending_seconds"),
            "preemptions": _delta(before, after, "preemptions"),
        }
    gains = [
        {"project": p, **row, "text": _sentence(p, row)}
        for p, row in rows.items()
        if row["mean_gpus"]["delta"] > GPU_EPSILON
    ]
    reclaimed = [
        {"project": p, **row, "text": _sentence(p, row)}
        for p, row in rows.items()
        if row["mean_gpus"]["delta"] < -GPU_EPSILON
        or (row["mean_gpus"]["delta"] <= GPU_EPSILON and row["preemptions"]["delta"] > 0)
    ]
    gains.sort(key=lambda r: -r["mean_gpus"]["delta"])
    reclaimed.sort(key=lambda r: (r["mean_gpus"]["delta"], -r["preemptions"]["delta"]))
    cluster = {
        key: _delta(baseline["cluster"], changed["cluster"], key)
        for key in ("mean_gpus", "mean_utilization", "preemptions", "pending_at_end")
    }
    return {
        "projects": rows,
        "gains": gains,
        "reclaimed": reclaimed,
        "cluster": cluster,
        "summary": _summary(gains, reclaimed),
    }


def _empty_row() -> dict[str, Any]:
    return {"mean_gpus": 0.0, "final_gpus": 0.0, "mean_pending_seconds": 0.0, "preemptions": 0}


def _delta(before: dict[str, Any], after: dict[str, Any], key: str) -> dict[str, float]:
    b, a = before.get(key, 0) or 0, after.get(key, 0) or 0
    return {"baseline": b, "changed": a, "delta": round(a - b, 4)}


def _sentence(project: str, row: dict[str, Any]) -> str:
    gpus = row["mean_gpus"]
    parts = []
    if gpus["delta"] > GPU_EPSILON:
        parts.append(f"{project} gains {gpus['delta']:.1f} GPUs on average")
    elif gpus["delta"] < -GPU_EPSILON:
        parts.append(f"{project} gets {-gpus['delta']:.1f} GPUs reclaimed on average")
    else:
        parts.append(f"{project} keeps its GPUs")
    parts[-1] += f" ({gpus['baseline']:.1f} -> {gpus['changed']:.1f})"
    final = row["final_gpus"]
    if abs(final["delta"]) > GPU_EPSILON:
        parts.append(f"{final['baseline']:g} -> {final['changed']:g} GPUs at the end")
    preemptions = row["preemptions"]["delta"]
    if preemptions:
        more = "more" if preemptions > 0 else "fewer"
        plural = "" if abs(preemptions) == 1 else "s"
        parts.append(f"{abs(preemptions):g} {more} preemption{plural}")
    wait = row["mean_pending_seconds"]["delta"]
    if abs(wait) >= PENDING_EPSILON:
        parts.append(
            f"waits {duration_text(abs(wait))} {'longer' if wait > 0 else 'less'} on average"
        )
    return ", ".join(parts)


def duration_text(seconds: float) -> str:
    """'45 s', '12 min' or '2.5 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _summary(gains: list[dict[str, Any]], reclaimed: list[dict[str, Any]]) -> str:
    if not gains and not reclaimed:
        return "No project's share changes over this horizon."
    parts = []
    if gains:
        parts.append("Gains: " + ", ".join(g["project"] for g in gains))
    if reclaimed:
        parts.append("Reclaimed: " + ", ".join(r["project"] for r in reclaimed))
    return "; ".join(parts) + "."


def redact_projects(result: dict[str, Any], *, visible: set[str], other: str) -> dict[str, Any]:
    """A copy of `result` where projects outside `visible` are summed into one `other` row.

    Touches every per-project place of a result: runs' projects and timelines, the
    comparison's rows and its gains/reclaimed lists, and workload names in event lists.
    """
    result = copy.deepcopy(result)
    for run in (result.get("runs") or {}).values():
        hidden = [p for p in run.get("projects", {}) if p not in visible]
        if hidden:
            merged = _empty_row() | {"department": "", "workloads": 0}
            for project in hidden:
                row = run["projects"].pop(project)
                for key in SUMMED_FIELDS:
                    merged[key] = round(merged.get(key, 0) + (row.get(key) or 0), 3)
            run["projects"][other] = merged
            series = run.get("timeline", {}).get("projects", {})
            hidden_series = [series.pop(p) for p in hidden if p in series]
            if hidden_series:
                series[other] = [round(sum(v), 3) for v in zip(*hidden_series, strict=True)]
        run["events"] = [
            e for e in run.get("events", []) if str(e.get("workload", "")).split("/")[0] in visible
        ]
    comparison = result.get("comparison")
    if comparison:
        hidden_rows = [p for p in comparison.get("projects", {}) if p not in visible]
        for project in hidden_rows:
            comparison["projects"].pop(project)
        for key in ("gains", "reclaimed"):
            shown = [r for r in comparison.get(key, []) if r["project"] in visible]
            if len(shown) < len(comparison.get(key, [])):
                shown.append({"project": other, "text": f"{other}: changes too"})
            comparison[key] = shown
        comparison["summary"] = _summary(comparison["gains"], comparison["reclaimed"])
    return result


def redact_scenario(scenario: dict[str, Any], *, visible: set[str]) -> dict[str, Any]:
    """A copy of a live cluster's scenario (no steps) without the projects outside
    `visible`: their queues and workloads are left out, and so are departments that keep
    no project. Pools and nodes stay (everyone may see the cluster's shape); the
    description says that the copy is partial."""
    scenario = copy.deepcopy(scenario)
    projects = [p for p in scenario.get("projects") or [] if p.get("name") in visible]
    departments = {p.get("department") for p in projects}
    scenario["projects"] = projects
    scenario["departments"] = [
        d for d in scenario.get("departments") or [] if d.get("name") in departments
    ]
    scenario["workloads"] = [
        w for w in scenario.get("workloads") or [] if w.get("project") in visible
    ]
    note = "projects you may not see are left out"
    scenario["description"] = f"{scenario.get('description') or ''} ({note})".strip()
    return scenario
