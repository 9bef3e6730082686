"""How things are printed: aligned tables, JSON for scripts, ages and numbers."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

GAP = "   "
NONE = "-"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, the last one left ragged (like kubectl)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *rows]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append(GAP.join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def print_json(data: Any, stream: TextIO | None = None) -> None:
    """Indented JSON, as the API gave it."""
    print(json.dumps(data, indent=2), file=stream or sys.stdout)


def parse_time(value: str | None) -> datetime | None:
    """An API date-time, or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def age(value: str | None, now: datetime | None = None) -> str:
    """How long ago, in the largest unit: 42s, 7m, 3h, 12d."""
    moment = parse_time(value)
    if moment is None:
        return NONE
    seconds = max(0, int(((now or datetime.now(UTC)) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def timestamp(value: str | None) -> str:
    """A date-time in local time with its age: `2025-01-31 14:02:11 (3m ago)`."""
    moment = parse_time(value)
    if moment is None:
        return NONE
    return f"{moment.astimezone().strftime('%Y-%m-%d %H:%M:%S')} ({age(value)} ago)"


def number(value: float | int | None) -> str:
    """2.0 -> 2, 0.5 -> 0.5."""
    if value is None:
        return NONE
    return f"{value:g}"


def shorten(text: str, width: int) -> str:
    """One line of at most `width` characters, an ellipsis where it was cut."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."
