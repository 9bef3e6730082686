"""A what-if result in plain words: who holds more or fewer GPUs, and what else moved.

Built from the result a run stores (scheduler_core.whatif.runner: runs' per-project and
cluster figures, and the comparison of a changed run with its baseline), after the
projects a reader may not see are folded away (simulation_result_for).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler_core.whatif.compare import GPU_EPSILON, PENDING_EPSILON, duration_text

GpuMove = tuple[str, float, float]
"""(project, mean GPUs before, mean GPUs after)."""

COUNTED = (
    ("preemptions", "preemption", "more", "fewer"),
    (
        "pending_at_end",
        "workload",
        "more still waiting at the end",
        "fewer still waiting at the end",
    ),
)
"""Cluster counts a comparison names when they change: (key, noun, more, fewer)."""


def _gpus(value: float) -> str:
    return f"{value:.1f}"


def _plural(count: float, noun: str) -> str:
    return f"{count:g} {noun}{'' if count == 1 else 's'}"


def gpu_moves_text(moves: Iterable[GpuMove]) -> str:
    """Who moves, e.g. "nlp's mean GPUs rise from 0.0 to 1.8; vision's fall from 8.0 to
    6.2": biggest moves first, a gain before an equal loss; projects that keep their GPUs
    are left out; "" when nobody moves."""
    moved = [m for m in moves if abs(m[2] - m[1]) > GPU_EPSILON]
    moved.sort(key=lambda m: (-round(abs(m[2] - m[1]), 3), m[2] < m[1]))  # ties: gains first
    parts = []
    for i, (project, before, after) in enumerate(moved):
        verb = "rise" if after > before else "fall"
        subject = f"{project}'s mean GPUs" if i == 0 else f"{project}'s"
        parts.append(f"{subject} {verb} from {_gpus(before)} to {_gpus(after)}")
    return "; ".join(parts)


def _count_change(before: float, after: float, noun: str, *, more: str, fewer: str) -> str:
    """ "2 more preemptions (1 -> 3)", or "" when the count stays."""
    delta = after - before
    if not delta:
        return ""
    word = more if delta > 0 else fewer
    return f"{_plural(abs(delta), noun)} {word} ({before:g} → {after:g})"


def comparison_text(comparison: dict[str, Any], *, subject: str = "With the change") -> str:
    """The outcome of a changed run against its baseline, in one or two sentences."""
    rows = comparison.get("projects") or {}
    moves = [
        (project, row["mean_gpus"]["baseline"], row["mean_gpus"]["changed"])
        for project, row in rows.items()
        if isinstance(row.get("mean_gpus"), dict)
    ]
    sentences = []
    gpus = gpu_moves_text(moves)
    if gpus:
        sentences.append(f"{subject}, {gpus}.")
    elif rows:
        sentences.append(f"{subject}, no project's mean GPUs move by more than {GPU_EPSILON:g}.")
    cluster = comparison.get("cluster") or {}
    extra = []
    for key, noun, more, fewer in COUNTED:
        counts = cluster.get(key)
        if counts:
            extra.append(
                _count_change(counts["baseline"], counts["changed"], noun, more=more, fewer=fewer)
            )
    for project, row in rows.items():
        wait = (row.get("mean_pending_seconds") or {}).get("delta", 0) or 0
        if abs(wait) >= PENDING_EPSILON:
            how = "longer" if wait > 0 else "less"
            extra.append(f"{project}'s workloads wait {duration_text(abs(wait))} {how} on average")
    extra = [e for e in extra if e]
    if extra:
        sentences.append(
            extra[0][0].upper() + extra[0][1:] + "".join(f"; {e}" for e in extra[1:]) + "."
        )
    return " ".join(sentences)


def run_text(run: dict[str, Any]) -> str:
    """One run on its own: how full the cluster was and what each project held."""
    cluster = run.get("cluster") or {}
    capacity = cluster.get("capacity_gpus") or 0
    utilisation = round((cluster.get("mean_utilization") or 0) * 100)
    projects = sorted(
        (run.get("projects") or {}).items(), key=lambda item: -(item[1].get("mean_gpus") or 0)
    )
    held = ", ".join(f"{name} {_gpus(p.get('mean_gpus') or 0)}" for name, p in projects)
    sentence = f"The cluster's {capacity:g} GPUs were {utilisation}% used on average"
    if held:
        sentence += f"; mean GPUs per project: {held}"
    tail = []
    if cluster.get("preemptions"):
        tail.append(_plural(cluster["preemptions"], "preemption"))
    if cluster.get("pending_at_end"):
        tail.append(f"{_plural(cluster['pending_at_end'], 'workload')} still waiting at the end")
    if tail:
        sentence += "; " + ", ".join(tail)
    return sentence + "."


def result_text(result: dict[str, Any]) -> str:
    """The whole result in words: the comparison if the run tried changes, else its run."""
    if result.get("comparison"):
        return comparison_text(result["comparison"])
    runs = result.get("runs") or {}
    if runs:
        return run_text(list(runs.values())[-1])
    return ""
