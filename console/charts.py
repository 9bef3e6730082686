"""Server-rendered SVG charts (no chart library in the browser)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


@dataclass
class Series:
    label: str
    colour: str  # a CSS colour, e.g. "var(--p3)"
    values: list[float]


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        candidate = step * 10**exponent
        if candidate >= value:
            return candidate
    return 10 ** (exponent + 1)


def stacked_area(
    labels: list[str],
    series: list[Series],
    *,
    width: int = 760,
    height: int = 230,
    capacity: float | None = None,
    unit: str = "GPUs",
) -> SafeString:
    """A stacked step-area chart of `series` over sample points labelled `labels` (first,
    middle and last are printed), with a capacity line if given."""
    left, right, top, bottom = 40, 10, 10, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(labels)
    totals = [sum(s.values[i] for s in series) for i in range(n)]
    peak = max([*totals, capacity or 0, 0])
    y_max = _nice_ceiling(peak)

    def x(i: int) -> float:
        return left + (plot_w * i / max(n - 1, 1))

    def y(v: float) -> float:
        return top + plot_h - (plot_h * v / y_max)

    parts = [
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(unit)} allocated '
        f'over time, per project" xmlns="http://www.w3.org/2000/svg">'
    ]
    for k in range(5):
        v = y_max * k / 4
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            f'stroke="#e6e9ef" stroke-width="1"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>'
        )
    base = [0.0] * n
    for s in series:
        upper = [base[i] + s.values[i] for i in range(n)]
        if n > 1 and any(s.values):
            # Sample i is what was held at time i: drawn over the interval that ends there.
            top_edge, bottom_edge = [], []
            for i in range(1, n):
                top_edge += [f"{x(i - 1):.1f},{y(upper[i]):.1f}", f"{x(i):.1f},{y(upper[i]):.1f}"]
                bottom_edge += [f"{x(i - 1):.1f},{y(base[i]):.1f}", f"{x(i):.1f},{y(base[i]):.1f}"]
            parts.append(
                f'<polygon points="{" ".join(top_edge + bottom_edge[::-1])}" '
                f'style="fill:{s.colour}" fill-opacity=".78"><title>{escape(s.label)}</title>'
                "</polygon>"
            )
        base = upper
    if capacity:
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(capacity):.1f}" '
            f'y2="{y(capacity):.1f}" stroke="#17202e" stroke-dasharray="4 3" stroke-width="1"/>'
            f'<text x="{width - right}" y="{y(capacity) - 4:.1f}" text-anchor="end">'
            f"capacity {capacity:g}</text>"
        )
    if n:
        for i in sorted({0, n // 2, n - 1}):
            anchor = "start" if i == 0 else "end" if i == n - 1 else "middle"
            parts.append(
                f'<text x="{x(i):.1f}" y="{height - 6}" text-anchor="{anchor}">'
                f"{escape(labels[i])}</text>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every label above is escaped
