"""Small presentation helpers for the console's templates: numbers, times, badges, bars."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()

PROJECT_COLOURS = 10


@register.filter
def gpus(value) -> str:
    """1.0 -> "1", 0.5 -> "0.5", None -> "—"."""
    if value is None or value == "":
        return "—"
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def setting_value(value) -> str:
    """A pool setting's value in words: True -> "on", False -> "off", None -> "no bound"."""
    if value is None:
        return "no bound"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


@register.filter
def gpu_s(value) -> str:
    """The plural ending of "GPU" after `value`: "" for a GPU or a share of one, else "s"."""
    try:
        return "" if 0 < float(value) <= 1 else "s"
    except (TypeError, ValueError):
        return "s"


@register.filter
def gpu_count(value) -> str:
    """A number of GPUs in words: 1 -> "1 GPU", 0.5 -> "0.5 GPU", 4 -> "4 GPUs"."""
    return f"{gpus(value)} GPU{gpu_s(value)}"


@register.filter
def pct(part, whole) -> float:
    """Share of `whole` as a percentage 0..100 (capped), for bar widths."""
    try:
        part, whole = float(part or 0), float(whole or 0)
    except (TypeError, ValueError):
        return 0.0
    if whole <= 0:
        return 0.0
    return round(min(max(part / whole * 100, 0.0), 100.0), 1)


def _human(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s" if minutes < 10 else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    return f"{hours // 24}d {hours % 24}h"


@register.filter
def since(value: datetime | None) -> str:
    """How long ago, compactly: "42s", "3m 05s", "2h 10m", "3d 4h"."""
    if not value:
        return "—"
    return _human((timezone.now() - value).total_seconds())


RELTIME_STYLES = ("ago", "duration")
"""How a ticking time reads: "3m ago", or the duration alone ("3m", for "waiting 3m")."""


@register.simple_tag
def reltime(value: datetime | None, style: str = "ago") -> str:
    """How long ago `value` was, in an element that reltime.js keeps ticking (on every
    page), its absolute time in the title."""
    if not value:
        return "—"
    assert style in RELTIME_STYLES, style
    text = since(value) + (" ago" if style == "ago" else "")
    return format_html(
        '<time datetime="{}" title="{}" data-reltime="{}">{}</time>',
        value.isoformat(),
        timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S"),
        style,
        text,
    )


@register.filter
def seconds(value) -> str:
    """A number of seconds as a compact duration."""
    if value in (None, ""):
        return "—"
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return _human(float(value))


@register.filter
def project_colour(project_id) -> str:
    """A stable colour class for a project (`pc0`..`pc9`)."""
    if project_id in (None, ""):
        return "other"
    return f"pc{int(project_id) % PROJECT_COLOURS}"


@register.simple_tag
def status_badge(status: str, label: str = "") -> str:
    """A coloured status pill (workloads, nodes, simulations)."""
    return format_html(
        '<span class="badge s-{}">{}</span>', status, label or str(status).capitalize()
    )


@register.simple_tag
def event_badge(event) -> str:
    return format_html('<span class="badge e-{}">{}</span>', event.type, event.get_type_display())


@register.inclusion_tag("console/partials/_qbar.html")
def quota_bar(allocated, deserved, fairshare, limit=None, scale=None):
    """Allocated as a fill, deserved quota as a solid mark, fairshare as a dashed mark, on a
    shared `scale` (so bars of one table compare), else on the largest of them."""
    values = [float(v or 0) for v in (allocated, deserved, fairshare)]
    scale = max([*values, float(scale or 0)]) or 1.0
    allocated_f, deserved_f, fair_f = values[0], values[1], values[2]
    return {
        "fill": pct(allocated_f, scale),
        "over": allocated_f > deserved_f + 1e-9,
        "deserved": pct(deserved_f, scale),
        "fair": pct(fair_f, scale),
        "title": f"allocated {allocated_f:g} · deserved {deserved_f:g} · fairshare {fair_f:g}"
        + (f" · limit {float(limit):g}" if limit is not None else ""),
    }


@register.filter
def node_names(allocations) -> str:
    """Distinct node names of a workload's pods, in pod order."""
    names: list[str] = []
    for alloc in allocations:
        if alloc.node.name not in names:
            names.append(alloc.node.name)
    return ", ".join(names)


@register.filter
def get_item(mapping, key):
    """`mapping[key]` in a template (None when missing)."""
    return mapping.get(key) if mapping else None


@register.filter
def input_number(value) -> str:
    """A number for an <input>: 40.0 -> "40", None -> "" (typed text is kept as typed)."""
    if value is None:
        return ""
    if isinstance(value, int | float):
        return f"{value:g}"
    return str(value)
