"""Filters for what node agents report: how a run ended, GPU memory, usage figures."""

from __future__ import annotations

from django import template

from scheduler_core.models import PodRun
from scheduler_core.models.agents import PodRunState

register = template.Library()


@register.filter
def run_outcome(run: PodRun) -> str:
    """The run's state in words: running, exited with code N, killed by SIGKILL, ..."""
    if run.state == PodRunState.EXITED:
        if run.signal:
            return f"killed by {run.signal}"
        return f"exited with code {run.exit_code}" if run.exit_code is not None else "exited"
    if run.state == PodRunState.START_FAILED:
        return f"could not start: {run.reason}" if run.reason else "could not start"
    if run.state == PodRunState.LOST:
        return f"lost: {run.reason}" if run.reason else "lost"
    if run.state == PodRunState.STOPPING:
        return f"stopping ({run.stop_reason})" if run.stop_reason else "stopping"
    return run.get_state_display().lower()


@register.filter
def gib(mib) -> str:
    """MiB as GiB with one decimal: 81920 -> "80.0"."""
    if mib is None:
        return "—"
    return f"{float(mib) / 1024:.1f}"


@register.filter
def percent(value) -> str:
    """A percentage without noise: 87.46 -> "87 %"."""
    if value is None:
        return "—"
    return f"{float(value):.0f} %"
