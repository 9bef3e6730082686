"""Slurm host lists (`fw[1-3,5],gpu07`) to names and back, as `scontrol show hostnames`
does, without calling it."""

from __future__ import annotations

import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        parts.append("".join(current))
    return [p for p in parts if p]


def expand(text: str) -> list[str]:
    """The host names of a Slurm host list, in its order; '' or '(null)' is none."""
    text = (text or "").strip()
    if text in ("", "(null)", "None"):
        return []
    names: list[str] = []
    for part in _split_top(text):
        names.extend(_expand_one(part))
    return names


def _expand_one(part: str) -> list[str]:
    start = part.find("[")
    if start < 0:
        return [part]
    end = part.index("]", start)
    prefix, body, suffix = part[:start], part[start + 1 : end], part[end + 1 :]
    names: list[str] = []
    for item in body.split(","):
        match = _RANGE.match(item)
        if match is None:
            raise ValueError(f"not a Slurm host list: {part!r}")
        first, last = match.group(1), match.group(2) or match.group(1)
        width = len(first)
        for number in range(int(first), int(last) + 1):
            names.extend(_expand_one(f"{prefix}{number:0{width}d}{suffix}"))
    return names


def compress(names: list[str]) -> str:
    """A host list naming `names` (plain, comma separated: Slurm reads it as it is)."""
    return ",".join(names)
