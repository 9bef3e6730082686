"""Server-rendered SVG charts (no chart library in the browser).

Every chart names what it shows inside the SVG itself: axis titles, a labelled capacity
line, and a legend with each coloured series' swatch and name, so a chart copied, printed
or read by a screen reader still says which colour is which project.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

LEGEND_ROW = 18
LEGEND_CHAR_WIDTH = 6.6  # an 11px label, roughly, to wrap the legend into rows
LEGEND_SWATCH = 10
LEGEND_GAP = 18
CAPACITY_STROKE = "#17202e"


@dataclass
class Series:
    label: str
    colour: str  # a CSS colour, e.g. "var(--p3)"
    values: list[float]


@dataclass
class LegendEntry:
    label: str
    colour: str
    dashed: bool = False  # a line (the capacity), not a filled area


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        candidate = step * 10**exponent
        if candidate >= value:
            return candidate
    return 10 ** (exponent + 1)


def legend_entries(series: list[Series], capacity: float | None) -> list[LegendEntry]:
    """What the legend lists: every series drawn (one with a value above zero), then the
    capacity line if there is one."""
    entries = [LegendEntry(s.label, s.colour) for s in series if any(s.values)]
    if capacity:
        entries.append(LegendEntry(f"capacity ({capacity:g})", CAPACITY_STROKE, dashed=True))
    return entries


def _legend_rows(entries: list[LegendEntry], width: float) -> list[list[tuple[float, LegendEntry]]]:
    """Entries laid out left to right, wrapped into rows no wider than `width`."""
    rows: list[list[tuple[float, LegendEntry]]] = [[]]
    x = 0.0
    for entry in entries:
        span = LEGEND_SWATCH + 5 + len(entry.label) * LEGEND_CHAR_WIDTH
        if rows[-1] and x + span > width:
            rows.append([])
            x = 0.0
        rows[-1].append((x, entry))
        x += span + LEGEND_GAP
    return rows if rows[0] else []


def _legend_svg(rows: list[list[tuple[float, LegendEntry]]], left: float, top: float) -> str:
    parts = ['<g class="chart-legend" data-chart-legend>']
    for r, row in enumerate(rows):
        y = top + r * LEGEND_ROW
        for x, entry in row:
            x += left
            if entry.dashed:
                mark = (
                    f'<line x1="{x:.1f}" x2="{x + LEGEND_SWATCH:.1f}" y1="{y + 5:.1f}" '
                    f'y2="{y + 5:.1f}" stroke="{entry.colour}" stroke-dasharray="4 3" '
                    'stroke-width="1.5"/>'
                )
            else:
                mark = (
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{LEGEND_SWATCH}" '
                    f'height="{LEGEND_SWATCH}" rx="2" style="fill:{escape(entry.colour)}"/>'
                )
            parts.append(
                f'<g data-legend-entry="{escape(entry.label)}">{mark}'
                f'<text x="{x + LEGEND_SWATCH + 5:.1f}" y="{y + 9:.1f}">{escape(entry.label)}'
                "</text></g>"
            )
    parts.append("</g>")
    return "".join(parts)


def stacked_area(
    labels: list[str],
    series: list[Series],
    *,
    width: int = 760,
    height: int = 230,
    capacity: float | None = None,
    unit: str = "GPUs",
    x_title: str = "time",
    y_top: float = 0.0,
) -> SafeString:
    """A stacked step-area chart of `series` over sample points labelled `labels` (first,
    middle and last are printed), with a capacity line if given; axis titles (`x_title`,
    `unit`) and, below the plot (`height` tall), a legend naming every series drawn. The y
    axis reaches at least `y_top`, so that charts drawn side by side share one scale."""
    left, right, top, bottom = 52, 10, 10, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(labels)
    totals = [sum(s.values[i] for s in series) for i in range(n)]
    peak = max([*totals, capacity or 0, y_top, 0])
    y_max = _nice_ceiling(peak)
    legend = _legend_rows(legend_entries(series, capacity), plot_w)
    full_height = height + (len(legend) * LEGEND_ROW + 6 if legend else 0)
    drawn = [s.label for s in series if any(s.values)]
    described = f"{unit} allocated over time, per project" + (
        f": {', '.join(drawn)}" if drawn else ""
    )

    def x(i: float) -> float:
        return left + (plot_w * i / max(n - 1, 1))

    def y(v: float) -> float:
        return top + plot_h - (plot_h * v / y_max)

    parts = [
        f'<svg viewBox="0 0 {width} {full_height}" role="img" aria-label="{escape(described)}" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    parts += _y_axis(y_max, y, left, width - right, top + plot_h / 2, unit)
    parts += _stacked_polygons(series, n, x, y)
    if capacity:
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(capacity):.1f}" '
            f'y2="{y(capacity):.1f}" stroke="{CAPACITY_STROKE}" stroke-dasharray="4 3" '
            'stroke-width="1"/>'
            f'<text x="{width - right}" y="{y(capacity) - 4:.1f}" text-anchor="end">'
            f"capacity {capacity:g} {escape(unit)}</text>"
        )
    axis_y = top + plot_h
    parts += _x_labels(labels, x, axis_y)
    parts.append(
        f'<text class="axis-title" data-axis="x" x="{left + plot_w / 2:.1f}" '
        f'y="{axis_y + 30:.1f}" text-anchor="middle">{escape(x_title)}</text>'
    )
    if legend:
        parts.append(_legend_svg(legend, left, height))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every label above is escaped


def _y_axis(
    y_max: float, y: Callable[[float], float], left: int, right_x: int, middle: float, unit: str
) -> list[str]:
    """Five grid lines with their values, and the y axis's title (`unit`)."""
    parts = []
    for k in range(5):
        v = y_max * k / 4
        parts.append(
            f'<line x1="{left}" x2="{right_x}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            f'stroke="#e6e9ef" stroke-width="1"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>'
        )
    parts.append(
        f'<text class="axis-title" data-axis="y" x="12" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {middle:.1f})">{escape(unit)}</text>'
    )
    return parts


def _stacked_polygons(
    series: list[Series], n: int, x: Callable[[float], float], y: Callable[[float], float]
) -> list[str]:
    """Each series drawn with a value, as a step area on top of the ones before it
    (sample i is what was held at time i: drawn over the interval that ends there)."""
    parts = []
    base = [0.0] * n
    for s in series:
        upper = [base[i] + s.values[i] for i in range(n)]
        if n > 1 and any(s.values):
            top_edge, bottom_edge = [], []
            for i in range(1, n):
                top_edge += [f"{x(i - 1):.1f},{y(upper[i]):.1f}", f"{x(i):.1f},{y(upper[i]):.1f}"]
                bottom_edge += [f"{x(i - 1):.1f},{y(base[i]):.1f}", f"{x(i):.1f},{y(base[i]):.1f}"]
            parts.append(
                f'<polygon points="{" ".join(top_edge + bottom_edge[::-1])}" '
                f'style="fill:{escape(s.colour)}" fill-opacity=".78"><title>{escape(s.label)}'
                "</title></polygon>"
            )
        base = upper
    return parts


def _x_labels(labels: list[str], x: Callable[[float], float], axis_y: float) -> list[str]:
    """The first, middle and last sample's labels under the x axis."""
    n = len(labels)
    parts = []
    for i in sorted({0, n // 2, n - 1}) if n else ():
        anchor = "start" if i == 0 else "end" if i == n - 1 else "middle"
        parts.append(
            f'<text x="{x(i):.1f}" y="{axis_y + 14:.1f}" text-anchor="{anchor}">'
            f"{escape(labels[i])}</text>"
        )
    return parts


@dataclass
class Line:
    """One figure over time, drawn as a filled area under a line."""

    label: str
    colour: str
    values: list[float]


@dataclass
class _Frame:
    """Where a time chart's plot sits, and its y scale."""

    width: int
    height: int
    n: int
    y_max: float
    left: int = 52
    right: int = 10
    top: int = 10
    bottom: int = 40

    @property
    def plot_w(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> float:
        return self.height - self.top - self.bottom

    def x(self, i: float) -> float:
        return self.left + self.plot_w * i / max(self.n, 1)

    def y(self, v: float) -> float:
        return self.top + self.plot_h - self.plot_h * v / self.y_max


def _grid(f: _Frame, unit: str, x_title: str) -> list[str]:
    parts = []
    for k in range(5):
        v = f.y_max * k / 4
        parts.append(
            f'<line x1="{f.left}" x2="{f.width - f.right}" y1="{f.y(v):.1f}" y2="{f.y(v):.1f}" '
            f'stroke="#e6e9ef" stroke-width="1"/>'
            f'<text x="{f.left - 6}" y="{f.y(v) + 4:.1f}" text-anchor="end">{v:g}</text>'
        )
    middle = f.top + f.plot_h / 2
    axis_y = f.top + f.plot_h
    parts.append(
        f'<text class="axis-title" data-axis="y" x="12" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {middle:.1f})">{escape(unit)}</text>'
        f'<text class="axis-title" data-axis="x" x="{f.left + f.plot_w / 2:.1f}" '
        f'y="{axis_y + 30:.1f}" text-anchor="middle">{escape(x_title)}</text>'
    )
    return parts


def _time_labels(f: _Frame, labels: list[str]) -> list[str]:
    """Five time labels along the x axis, at the start of their steps."""
    axis_y = f.top + f.plot_h
    shown = sorted({round(i * (f.n - 1) / 4) for i in range(5)}) if f.n > 1 else [0]
    parts = []
    for i in shown[: f.n]:
        anchor = "start" if i == 0 else "end" if i == f.n - 1 else "middle"
        parts.append(
            f'<text x="{f.x(i + (1 if i == f.n - 1 else 0)):.1f}" y="{axis_y + 14:.1f}" '
            f'text-anchor="{anchor}">{escape(labels[i])}</text>'
        )
    return parts


def _area(f: _Frame, line: Line) -> str:
    """A step area: value i is the mean over step i, drawn across it."""
    edge = []
    for i, v in enumerate(line.values):
        edge += [f"{f.x(i):.1f},{f.y(v):.1f}", f"{f.x(i + 1):.1f},{f.y(v):.1f}"]
    base = f"{f.x(f.n):.1f},{f.y(0):.1f} {f.x(0):.1f},{f.y(0):.1f}"
    colour = escape(line.colour)
    return (
        f'<g data-series="{escape(line.label)}"><polygon points="{" ".join(edge)} {base}" '
        f'style="fill:{colour}" fill-opacity=".35"/><polyline points="{" ".join(edge)}" '
        f'fill="none" style="stroke:{colour}" stroke-width="1.5"/></g>'
    )


def _hover_columns(f: _Frame, hover: list[str]) -> list[str]:
    """One transparent column per step carrying its values: a native tooltip (<title>),
    and `data-hover` for console/js/chart-hover.js, which shows them at once."""
    parts = ['<g class="hover-cols">']
    for i, text in enumerate(hover):
        x0, x1 = f.x(i), f.x(i + 1)
        parts.append(
            f'<rect x="{x0:.1f}" y="{f.top}" width="{max(x1 - x0, 0.5):.2f}" '
            f'height="{f.plot_h:.1f}" data-hover="{escape(text)}"><title>{escape(text)}'
            "</title></rect>"
        )
    parts.append("</g>")
    return parts


def time_chart(
    labels: list[str],
    lines: list[Line],
    hover: list[str],
    *,
    unit: str,
    described: str,
    width: int = 760,
    height: int = 200,
    x_title: str = "time",
) -> SafeString:
    """Areas of `lines` (not stacked: each from zero, drawn in order) over time steps
    labelled `labels`, with a legend, and a hover text per step (`hover`) shown when the
    pointer is over that step."""
    n = len(labels)
    peak = max((v for line in lines for v in line.values), default=0.0)
    f = _Frame(width, height, n, _nice_ceiling(peak))
    legend = _legend_rows([LegendEntry(line.label, line.colour) for line in lines], f.plot_w)
    full_height = height + (len(legend) * LEGEND_ROW + 6 if legend else 0)
    parts = [
        f'<svg viewBox="0 0 {width} {full_height}" role="img" aria-label="{escape(described)}" '
        'xmlns="http://www.w3.org/2000/svg" data-hover-chart>',
        *_grid(f, unit, x_title),
        *(_area(f, line) for line in lines if n),
        *_time_labels(f, labels),
        *_hover_columns(f, hover),
    ]
    if legend:
        parts.append(_legend_svg(legend, f.left, height))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every label above is escaped
