"""The building blocks every schema shares: a strict model base and value types whose
bounds are declared once.

Types are strict: "3" is not 3, true is not 1, 1.5 is not a whole number (2.0 is, as JSON
does not tell them apart). A number type is declared once with its bounds,
`Pods = Annotated[int, whole(ge=1, le=MAX_PODS)]`: the metadata checks type and bounds with
messages that state them, and carries the bounds into the JSON schema. Types are written as
`Annotated[<type>, <metadata>]` so that mypy sees the type and pydantic the rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, Union, get_args

from annotated_types import GroupedMetadata
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

T = TypeVar("T")


class _LeftOutOnly:
    """Pydantic metadata on `T | None`: validate as `T`, so None is only the default of a
    key left out and a stated null is refused with T's own message."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        stated = tuple(arg for arg in get_args(source) if arg is not type(None))
        # Union[] rebuilds T from its members (T itself when it is not a union).
        return handler.generate_schema(Union[stated])  # noqa: UP007


Omittable = Annotated[T | None, _LeftOutOnly()]
"""A key that may be left out (then None) but not given as null: `pods: Omittable[Pods] =
None`. Typed `T | None`, as reading it may give None."""


class StrictModel(BaseModel):
    """A shape whose unknown keys are refused and whose values are never coerced.

    A key that may be left out but not given as null is `Omittable` (`pods: Omittable[Pods] =
    None`): left out it is None, null is refused. `given()` tells which keys the input
    stated.
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


def _within(value: float, ge: float | None, gt: float | None, le: float | None) -> None:
    if gt is not None and value <= gt:
        raise rule_error("must be above {gt}, got {value}", gt=_n(gt), value=show(value))
    if ge is not None and value < ge:
        if ge == 0:
            raise rule_error("must be 0 or more, got {value}", value=show(value))
        if le is None:
            raise rule_error("must be at least {ge}, got {value}", ge=_n(ge), value=show(value))
        raise rule_error(
            "must be at least {ge} (from {ge} to {le}), got {value}",
            ge=_n(ge),
            le=_n(le),
            value=show(value),
        )
    if le is not None and value > le:
        raise rule_error("must be at most {le}, got {value}", le=_n(le), value=show(value))


def _json_schema(kind: str, ge: float | None, gt: float | None, le: float | None) -> dict[str, Any]:
    bounds = {"minimum": ge, "exclusiveMinimum": gt, "maximum": le}
    return {"type": kind, **{k: v for k, v in bounds.items() if v is not None}}


@dataclass(frozen=True, eq=False)
class _Checked(GroupedMetadata):
    """Pydantic metadata: `check` runs on the value as given; `json_schema` describes what it
    accepts. Compared by identity (its schema is a dict), so `Omittable[...]` can hash it."""

    check: Callable[[Any], Any]
    json_schema: dict[str, Any]

    def __iter__(self) -> Iterator[object]:
        yield BeforeValidator(self.check)
        yield WithJsonSchema(self.json_schema)


def number(*, ge: float | None = None, gt: float | None = None, le: float | None) -> _Checked:
    """A finite JSON number (a whole one is fine) within the bounds (`le` None: no upper
    bound but finiteness): the metadata of `Annotated[float, number(...)]`."""

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

    return _Checked(check, _json_schema("number", ge, gt, le))


def whole(*, ge: int | None = None, le: int) -> _Checked:
    """A whole JSON number within the bounds (2.0 is 2: JSON does not tell them apart): the
    metadata of `Annotated[int, whole(...)]`."""

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

    return _Checked(check, _json_schema("integer", ge, None, le))


def one_of(options: Sequence[str]) -> _Checked:
    """One of a fixed set of strings: the metadata of `Annotated[str, one_of(...)]`."""
    allowed = tuple(options)

    def check(value: Any) -> str:
        if value not in allowed or not isinstance(value, str):
            raise rule_error(
                "must be one of {options}, got {value}",
                options=", ".join(allowed),
                value=show(value),
            )
        return value

    return _Checked(check, {"type": "string", "enum": allowed})


def zero_or_at_least(minimum: float, unit: str) -> AfterValidator:
    """A validator of an amount that is 0 (not asked) or at least `minimum`: a pod asking
    1e-9 of a GPU asks for nothing it could be given."""

    def check(value: float) -> float:
        if 0 < value < minimum:
            raise rule_error(
                "must be 0 or at least {minimum} {unit}, got {value:g}",
                minimum=_n(minimum),
                unit=unit,
                value=value,
            )
        return value

    return AfterValidator(check)


def check_running_total(
    sizes: Iterable[tuple[Sequence[str | int], int]], *, most: int, noun: str, whole: str
) -> None:
    """Refuse the entry at which the sizes (where, size) add up past `most`: a bound no one
    entry shows (nodes after `count`, pods of a whole file); the entry is named."""
    total = 0
    for at, size in sizes:
        total += size
        if total > most:
            raise rule_error(
                "brings the {noun} to {n}; {whole} has at most {most} {noun}",
                at=at,
                about_key=False,
                noun=noun,
                n=total,
                whole=whole,
                most=most,
            )


def _gpus_check(value: float) -> float:
    if value > 1 and not value.is_integer():
        raise rule_error(
            "must be a whole number or a fraction below 1 (a fraction of one GPU shares a "
            "device), got {value:g}",
            value=value,
        )
    return value


# --- bounds: declared here once, for every surface ---------------------------------------

MAX_PODS = 4096
"""Pods of one workload, all its groups together: the largest gang is 512 nodes of 8 GPUs,
one pod per GPU (a bigger one is a mistake, and every pod is a row on every node page)."""
MIN_GPU_FRACTION = 0.01
"""The smallest share of a GPU a pod may ask for (a hundredth of a device)."""
MIN_CPU = 0.001
"""The smallest CPU a pod may ask for: a millicore, as in Kubernetes."""
MIN_MEMORY = 0.001
"""The smallest memory a pod may ask for, in GiB (about a MiB)."""
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
MAX_QUOTA = 1e12
MAX_LABELS = 64
MAX_LABEL_LENGTH = 253

# Scenario files and what-if runs: an upload or a run must not take the machine (a node
# `count` or a workload's `pods` multiply what a few characters of text cost).
MAX_SCENARIO_NODES = 10_000
"""Nodes of a scenario after `count` expansion, what-if additions included."""
MAX_SCENARIO_WORKLOADS = 100_000
"""Workloads of a scenario: at time 0 and submitted by its steps, together."""
MAX_SCENARIO_PODS = 1_000_000
"""Pods of all those workloads together."""
MAX_STEPS = 10_000
"""Steps of a scenario."""
MAX_EVENTS_PER_STEP = 10_000
"""Events of one step."""
MAX_SCENARIO_TIME = MAX_SECONDS
"""The last step's time: ten years of simulated time."""
MAX_CHANGES = 1000
"""Entries of one kind of what-if change (quotas, weights, pools, added or removed nodes)."""
MAX_WHATIF_WORK = 2_000_000_000
"""Runs x steps x nodes x workloads of one what-if, the scheduling cycles' cost (about a
microsecond each: some 30 minutes at most)."""

Pods = Annotated[int, whole(ge=1, le=MAX_PODS)]
GPUs = Annotated[
    float,
    number(ge=0, le=MAX_GPUS_PER_POD),
    zero_or_at_least(MIN_GPU_FRACTION, "GPUs"),
    AfterValidator(_gpus_check),
]
CPU = Annotated[float, number(ge=0, le=MAX_CPU_PER_POD), zero_or_at_least(MIN_CPU, "CPU cores")]
Memory = Annotated[
    float, number(ge=0, le=MAX_MEMORY_PER_POD), zero_or_at_least(MIN_MEMORY, "GiB of memory")
]
Priority = Annotated[int, whole(ge=-PRIORITY_BOUND, le=PRIORITY_BOUND)]
Weight = Annotated[float, number(gt=0, le=MAX_WEIGHT)]
BackoffLimit = Annotated[int, whole(ge=0, le=MAX_BACKOFF_LIMIT)]
Seconds = Annotated[int, whole(ge=0, le=MAX_SECONDS)]
PositiveSeconds = Annotated[int, whole(ge=1, le=MAX_SECONDS)]
Duration = Annotated[float, number(gt=0, le=MAX_SECONDS)]
Time = Annotated[float, number(ge=-MAX_TIME, le=MAX_TIME)]
Amount = Annotated[float, number(ge=0, le=MAX_QUOTA)]
QueueWeight = Annotated[float, number(ge=0, le=MAX_WEIGHT)]
Rank = Annotated[int, whole(ge=-PRIORITY_BOUND, le=PRIORITY_BOUND)]
NodeGPUs = Annotated[int, whole(ge=0, le=MAX_NODE_GPUS)]
NodeCPU = Annotated[float, number(ge=0, le=MAX_NODE_CPU)]
NodeMemory = Annotated[float, number(ge=0, le=MAX_NODE_MEMORY)]
PerCycle = Annotated[int, whole(ge=1, le=MAX_PER_CYCLE)]
MAX_PREEMPTIONS_PER_WORKLOAD = 1000
PerWorkload = Annotated[int, whole(ge=1, le=MAX_PREEMPTIONS_PER_WORKLOAD)]
Preemptions = Annotated[int, whole(ge=0, le=2**31 - 1)]
"""Times a workload was preempted (a count the database keeps in a positive integer)."""
UsageK = Annotated[float, number(ge=0, le=None)]
"""Time-based fairshare's strength: any finite number from 0 (FORMAT v1.2; KAI sets no
upper bound, and its own end-to-end configuration uses 10000)."""

NAME_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$"
Slug = Annotated[str, Field(min_length=1, max_length=63, pattern=NAME_PATTERN)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
"""A name in a scenario: any non-empty string (names of copied live objects included)."""


def name_of(noun: str) -> BeforeValidator:
    """A Name that refers to a `noun` (the message says what kind of name is wanted): the
    metadata of `Annotated[Name, name_of(...)]`."""

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            raise rule_error("must be a {noun} name, got {value}", noun=noun, value=show(value))
        return value

    return BeforeValidator(check)


_CONTROL = re.compile(r"[\x00-\x1f]")


def string_map(*, max_entries: int) -> BeforeValidator:
    """Names (1 to 253 characters, no control characters) to strings, at most `max_entries`
    of them: the metadata of `Annotated[dict[str, <string type>], string_map(...)]`."""

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

    return BeforeValidator(check)


Labels = Annotated[
    dict[str, Annotated[str, Field(max_length=MAX_LABEL_LENGTH)]],
    string_map(max_entries=MAX_LABELS),
]
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
