"""The building blocks every schema shares: a strict model base and value types whose
bounds are declared once.

Types are strict: "3" is not 3, true is not 1, 1.5 is not a whole number (2.0 is, as JSON
does not tell them apart). A number type is declared once with its bounds,
`whole(ge=1, le=MAX_PODS)`: it checks type and bounds with messages that state them, and
carries the bounds into the JSON schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import InitErrorDetails, PydanticCustomError


class StrictModel(BaseModel):
    """A shape whose unknown keys are refused and whose values are never coerced.

    A key that may be left out but not given as null defaults to None without None in its
    type (`pods: Pods = None`): left out it is None, null is refused. `given()` tells which
    keys the input stated.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    def given(self) -> dict[str, Any]:
        """The keys the input stated (null included), with their values."""
        return self.model_dump(include=self.model_fields_set)


def show(value: Any) -> str:
    """A value as an error message quotes it (cut short when long)."""
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def counted_names(name: str, count: int | None) -> list[str]:
    """The nodes an entry with `count` stands for: name-1 .. name-N (just `name` without)."""
    if count is None:
        return [name]
    return [f"{name}-{i}" for i in range(1, count + 1)]


def rule_error(
    template: str, *, at: Sequence[str | int] = (), about_key: bool = True, **values: Any
) -> PydanticCustomError:
    """A broken rule as a pydantic error. `template` writes key names in backticks
    (`pods`) so that each surface quotes them its own way; `at` places the error below the
    value being validated (e.g. ("min_pods",) from a model validator); `about_key` False:
    the message is about the object there, not about one of its keys."""
    return PydanticCustomError(
        "rule", template.format(**values), {"at": tuple(at), "about_key": about_key}
    )


def with_more_errors(
    handler: Callable[[Any], Any], value: Any, more: Sequence[PydanticCustomError], at: Sequence
) -> ValidationError:
    """The errors of validating `value` with `handler` and the `more` errors at `at` (one
    path each), as one ValidationError: a rule about the whole list is reported together
    with the problems of its items."""
    found: list[InitErrorDetails] = []
    try:
        handler(value)
    except ValidationError as exc:
        for e in exc.errors():
            kind = (
                PydanticCustomError("rule", e["msg"], e["ctx"])
                if e["type"] == "rule"
                else e["type"]
            )
            found.append(
                InitErrorDetails(type=kind, loc=e["loc"], input=e["input"], ctx=e.get("ctx", {}))
            )
    found += [
        InitErrorDetails(type=err, loc=tuple(loc), input=None)
        for err, loc in zip(more, at, strict=True)
    ]
    return ValidationError.from_exception_data("input", found)


def _n(x: float) -> str:
    """A bound as people write it: 1000000, 0.5."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _bound_text(ge: float | None, gt: float | None) -> str:
    if gt is not None:
        return f" above {_n(gt)}"
    if ge is not None:
        return f" >= {_n(ge)}"
    return ""


def _within(value: float, ge: float | None, gt: float | None, le: float) -> None:
    if gt is not None and value <= gt:
        raise rule_error("must be above {gt}, got {value}", gt=_n(gt), value=show(value))
    if ge is not None and value < ge:
        if ge == 0:
            raise rule_error("must be 0 or more, got {value}", value=show(value))
        raise rule_error(
            "must be at least {ge} (from {ge} to {le}), got {value}",
            ge=_n(ge),
            le=_n(le),
            value=show(value),
        )
    if value > le:
        raise rule_error("must be at most {le}, got {value}", le=_n(le), value=show(value))


def _json_schema(kind: str, ge: float | None, gt: float | None, le: float) -> dict[str, Any]:
    bounds = {"minimum": ge, "exclusiveMinimum": gt, "maximum": le}
    return {"type": kind, **{k: v for k, v in bounds.items() if v is not None}}


def number(*, ge: float | None = None, gt: float | None = None, le: float) -> Any:
    """A finite JSON number (a whole one is fine) within the bounds."""

    def check(value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise rule_error(
                "must be a number{bound}, got {value}", bound=_bound_text(ge, gt), value=show(value)
            )
        _within(value, ge, gt, le)
        return float(value)

    schema = _json_schema("number", ge, gt, le)
    return Annotated[float, BeforeValidator(check), WithJsonSchema(schema)]


def whole(*, ge: int | None = None, le: int) -> Any:
    """A whole JSON number within the bounds (2.0 is 2: JSON does not tell them apart)."""

    def check(value: Any) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise rule_error(
                "must be a whole number{bound}, got {value}",
                bound=_bound_text(ge, None),
                value=show(value),
            )
        _within(value, ge, None, le)
        return value

    schema = _json_schema("integer", ge, None, le)
    return Annotated[int, BeforeValidator(check), WithJsonSchema(schema)]


def one_of(options: Sequence[str]) -> Any:
    """One of a fixed set of strings."""
    allowed = tuple(options)

    def check(value: Any) -> str:
        if value not in allowed or not isinstance(value, str):
            raise rule_error(
                "must be one of {options}, got {value}",
                options=", ".join(allowed),
                value=show(value),
            )
        return value

    return Annotated[
        str, BeforeValidator(check), WithJsonSchema({"type": "string", "enum": allowed})
    ]


def _gpus_check(value: float) -> float:
    if value > 1 and not value.is_integer():
        raise rule_error(
            "must be a whole number or a fraction below 1 (a fraction of one GPU shares a "
            "device), got {value:g}",
            value=value,
        )
    return value


# --- bounds: declared here once, for every surface ---------------------------------------

MAX_PODS = 10_000
MAX_GPUS_PER_POD = 1024
MAX_CPU_PER_POD = 100_000
MAX_MEMORY_PER_POD = 1e8
PRIORITY_BOUND = 1_000_000
MAX_WEIGHT = 1_000_000
MAX_BACKOFF_LIMIT = 1000
MAX_SECONDS = 10 * 365 * 24 * 3600  # ten years
MAX_TIME = 1e12  # simulated or epoch seconds
MAX_NODE_GPUS = 1024
MAX_NODE_CPU = 1_000_000
MAX_NODE_MEMORY = 1e9
MAX_PER_CYCLE = 1_000_000
MAX_CONSOLIDATION_EVALUATIONS = 100_000
MAX_USAGE_K = 1000
MAX_QUOTA = 1e12
MAX_LABELS = 64
MAX_LABEL_LENGTH = 253

Pods = whole(ge=1, le=MAX_PODS)
GPUs = Annotated[number(ge=0, le=MAX_GPUS_PER_POD), AfterValidator(_gpus_check)]
CPU = number(ge=0, le=MAX_CPU_PER_POD)
Memory = number(ge=0, le=MAX_MEMORY_PER_POD)
Priority = whole(ge=-PRIORITY_BOUND, le=PRIORITY_BOUND)
Weight = number(gt=0, le=MAX_WEIGHT)
BackoffLimit = whole(ge=0, le=MAX_BACKOFF_LIMIT)
Seconds = whole(ge=0, le=MAX_SECONDS)
PositiveSeconds = whole(ge=1, le=MAX_SECONDS)
Duration = number(gt=0, le=MAX_SECONDS)
Time = number(ge=-MAX_TIME, le=MAX_TIME)
Amount = number(ge=0, le=MAX_QUOTA)
QueueWeight = number(ge=0, le=MAX_WEIGHT)
Rank = whole(ge=-PRIORITY_BOUND, le=PRIORITY_BOUND)
NodeGPUs = whole(ge=0, le=MAX_NODE_GPUS)
NodeCPU = number(ge=0, le=MAX_NODE_CPU)
NodeMemory = number(ge=0, le=MAX_NODE_MEMORY)
PerCycle = whole(ge=1, le=MAX_PER_CYCLE)
UsageK = number(ge=0, le=MAX_USAGE_K)

NAME_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$"
Slug = Annotated[str, Field(min_length=1, max_length=63, pattern=NAME_PATTERN)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
"""A name in a scenario: any non-empty string (names of copied live objects included)."""


def name_of(noun: str) -> Any:
    """A Name that refers to a `noun` (the message says what kind of name is wanted)."""

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            raise rule_error("must be a {noun} name, got {value}", noun=noun, value=show(value))
        return value

    return Annotated[Name, BeforeValidator(check)]


_CONTROL = re.compile(r"[\x00-\x1f]")


def string_map(*, max_entries: int, max_length: int) -> Any:
    """Names (1 to 253 characters, no control characters) to strings of at most
    `max_length` characters, at most `max_entries` of them."""

    def check(value: Any) -> Any:
        if isinstance(value, dict):
            if len(value) > max_entries:
                raise rule_error("at most {n} entries", n=max_entries)
            for key in value:
                if isinstance(key, str) and (
                    not 0 < len(key) <= MAX_LABEL_LENGTH or _CONTROL.search(key)
                ):
                    raise rule_error(
                        "names must have 1 to {n} characters and no control characters",
                        n=MAX_LABEL_LENGTH,
                    )
        return value

    return Annotated[
        dict[str, Annotated[str, Field(max_length=max_length)]], BeforeValidator(check)
    ]


Labels = string_map(max_entries=MAX_LABELS, max_length=MAX_LABEL_LENGTH)
"""Label names to label values (strings), like Kubernetes node labels."""


def _yaml_scalars_as_text(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {
        k: (str(v).lower() if isinstance(v, bool) else str(v)) if isinstance(v, int | float) else v
        for k, v in value.items()
    }


ScenarioLabels = Annotated[Labels, BeforeValidator(_yaml_scalars_as_text)]
"""Labels as a YAML file writes them: `{nvlink: true, gen: 4}` are the labels "true", "4"."""
