"""One translator from pydantic's ValidationError to the project's messages.

Every surface shows the same words: the API and the services key them by field path
(`groups[1].pods`), the scenario loader writes them as a sentence naming file, entry and
field (`scenario.yaml: workloads[3] (name 'w4'): 'gpus' must be a number >= 0, got 'two'`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from scheduler_core.schemas.base import show

Path = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)

_KEY_NAME = re.compile(r"`([^`]*)`")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the input: where (`path`) and why (`text`, naming other keys in
    backticks). `about_key`: the text says something about the key at the end of `path`
    ("must be a number"); otherwise about the object at `path` ("unknown key 'gpu'")."""

    path: Path
    text: str
    about_key: bool = True
    unknown_key: str | int | None = None

    @property
    def field(self) -> str:
        """The path as a client writes it: `groups[1].pods`, `changes.quotas[0]`; an unknown
        key of the input itself is its own field."""
        if not self.path and self.unknown_key is not None:
            return str(self.unknown_key)
        return field_name(self.path)

    @property
    def message(self) -> str:
        """The reason, naming other keys plainly (for field maps)."""
        return _KEY_NAME.sub(r"\1", self.text)

    @property
    def owner(self) -> Path:
        """The object the problem is in (for sentences naming an entry of a file)."""
        if not self.about_key or not self.path:
            return self.path
        cut = 2 if isinstance(self.path[-1], int) and len(self.path) > 1 else 1
        return self.path[:-cut]

    @property
    def sentence(self) -> str:
        """The reason as a file's reader sees it, keys in quotes:
        "'min_pods' (3) must not exceed 'pods' (2)", "unknown key 'gpu'"."""
        text = _KEY_NAME.sub(r"'\1'", self.text)
        key = self.path[len(self.owner) :]
        return f"{field_name(key)!r} {text}" if key else text


class SchemaInvalid(Exception):
    """Input that does not match its schema: every problem found, in order."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = list(problems)

    def by_field(self, prefix: str = "") -> dict[str, list[str]]:
        """{field path: [messages]}, each path under `prefix` (e.g. "changes")."""
        out: dict[str, list[str]] = {}
        for p in self.problems:
            key = ".".join(k for k in (prefix, p.field) if k).replace(".[", "[")
            out.setdefault(key, []).append(p.message)
        return out


def validate(model: type[M], data: Any) -> M:
    """`data` as a `model`, or SchemaInvalid with the project's messages."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SchemaInvalid(problems(exc)) from None


def problems(exc: ValidationError) -> list[Problem]:
    """The project's messages for a pydantic ValidationError."""
    return [_problem(error) for error in exc.errors(include_url=False)]


def field_name(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _problem(error: Any) -> Problem:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    path: Path = tuple(p for p in error["loc"] if p != "[key]")
    value = error.get("input")
    if kind == "rule":  # our own rules: the message is final
        return Problem(path + tuple(ctx.get("at", ())), error["msg"], ctx.get("about_key", True))
    if kind == "extra_forbidden":
        return Problem(path[:-1], f"unknown key {show(path[-1])}", False, path[-1])
    if kind == "missing":
        return Problem(path, "is required")
    return Problem(path, _MESSAGES.get(kind, _fallback)(value, ctx))


def _fallback(value: Any, ctx: dict[str, Any]) -> str:
    return f"is not valid, got {show(value)}"


_MESSAGES = {
    "bool_type": lambda v, c: f"must be true or false, got {show(v)}",
    "string_type": lambda v, c: f"must be a string, got {show(v)}",
    "string_too_short": lambda v, c: "must not be empty",
    "string_too_long": lambda v, c: f"must have at most {c['max_length']} characters",
    "string_pattern_mismatch": lambda v, c: (
        f"use lowercase letters, digits and dashes (like 'vision-team'), got {show(v)}"
    ),
    "list_type": lambda v, c: f"must be a list, got {show(v)}",
    "too_short": lambda v, c: f"must list at least {c['min_length']}",
    "too_long": lambda v, c: f"must list at most {c['max_length']}",
    "dict_type": lambda v, c: f"must be an object (a mapping), got {show(v)}",
    "model_type": lambda v, c: f"must be an object (a mapping), got {show(v)}",
    "model_attributes_type": lambda v, c: f"must be an object (a mapping), got {show(v)}",
}
