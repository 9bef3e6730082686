"""A job trace replayed as a what-if run (the console's and the API's "job trace" source):
the options it takes, checked field by field, and the run itself, reporting progress.

The replay is `manage.py replay_trace`'s (scheduler_core.whatif.replay.replay_window): the
trace's jobs of one window on a synthetic cluster, through the engine, FIFO and FIFO with
backfill, their figures side by side. Options (all but `start` have defaults):

    {"start": "2017-10-25T19:00", "hours": 24, "nodes": 48 | null, "load": null,
     "gpus_per_node": 8, "cap_hours": 24, "step_seconds": 60,
     "team_nodes": {"team": nodes, ...} | null, "config": {pool setting: value, ...}}

`nodes` or `load` sizes the cluster (one of them); `team_nodes` gives each team's deserved
share (equal shares without it); `config` takes a scenario's pool settings (FORMAT.md).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler_core.whatif.replay import SCHEDULERS, replay_window, trace_config
from scheduler_core.whatif.scenarios import ScenarioError
from scheduler_core.whatif.traces import (
    TraceCluster,
    TraceError,
    TraceJob,
    parse_time,
    parse_trace,
    trace_scenario,
)

MAX_TRACE_CHARS = 8_000_000
MAX_HOURS = 7 * 24
MAX_NODES = 512
MAX_GPUS_PER_NODE = 64
MAX_JOBS = 20_000
MAX_CAP_HOURS = 30 * 24
STEP_RANGE = (10, 3600)
LOAD_RANGE = (0.01, 100.0)

Problems = list[tuple[str, str]]
"""(field, message) pairs; fields are the option's key, or "trace_text"."""


@dataclass(frozen=True)
class TraceRequest:
    """A checked trace run: which window, on what cluster, with which pool settings."""

    start: datetime
    hours: float = 24.0
    nodes: int | None = None
    load: float | None = None
    gpus_per_node: int = 8
    cap_hours: float = 24.0
    step_seconds: float = 60.0
    team_nodes: dict[str, int] | None = None
    config: dict[str, Any] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        """The options as stored (and shown): JSON."""
        return {
            "start": self.start.strftime("%Y-%m-%dT%H:%M" + (":%S" if self.start.second else "")),
            "hours": self.hours,
            "nodes": self.nodes,
            "load": self.load,
            "gpus_per_node": self.gpus_per_node,
            "cap_hours": self.cap_hours,
            "step_seconds": self.step_seconds,
            "team_nodes": self.team_nodes,
            "config": self.config,
        }


def check_trace_request(text: Any, options: Any) -> tuple[TraceRequest | None, Problems]:
    """The request that `options` and the trace `text` describe, or the problems, each
    naming its field. The trace is read for the window, so a window without jobs (or with
    too many) is refused before a worker is asked."""
    request, problems = check_trace_options(options)
    if not isinstance(text, str) or not text.strip():
        problems.append(("trace_text", "upload or paste a trace (CSV in the Philly columns)"))
    elif len(text) > MAX_TRACE_CHARS:
        problems.append(
            ("trace_text", f"at most {MAX_TRACE_CHARS:,} characters, got {len(text):,}")
        )
    if problems or request is None:
        return None, problems
    try:
        jobs = read_window(text, request)
    except TraceError as exc:
        return None, [("trace_text", str(exc))]
    if not jobs:
        problems.append(("start", f"no job of the trace is submitted in the {_window(request)}"))
    elif len(jobs) > MAX_JOBS:
        problems.append(
            ("hours", f"{len(jobs):,} jobs in the {_window(request)}; at most {MAX_JOBS:,}")
        )
    return (None if problems else request), problems


def check_trace_options(options: Any) -> tuple[TraceRequest | None, Problems]:
    """The request that `options` describe (what a stored run keeps), or the problems,
    each naming its option."""
    problems: Problems = []
    if not isinstance(options, Mapping):
        return None, [("trace", 'give the trace options as an object, e.g. {"start": ...}')]
    known = set(TraceRequest.__dataclass_fields__)
    problems += [(str(k), "not an option of a trace run") for k in options if k not in known]
    start = _start(options.get("start"), problems)
    hours = _number(options, "hours", 24.0, (0.0, MAX_HOURS), problems, above_low=True)
    nodes = _whole(_number(options, "nodes", None, (1, MAX_NODES), problems, whole=True))
    load = _number(options, "load", None, LOAD_RANGE, problems)
    if not {"nodes", "load"} & {key for key, _ in problems}:
        if nodes is None and load is None:
            problems.append(("nodes", "give the cluster's nodes, or the offered load to size it"))
        elif nodes is not None and load is not None:
            problems.append(("load", "give the nodes or the offered load, not both"))
    gpus_per_node = _whole(
        _number(options, "gpus_per_node", 8, (1, MAX_GPUS_PER_NODE), problems, whole=True)
    )
    cap_hours = _number(options, "cap_hours", 24.0, (0.0, MAX_CAP_HOURS), problems, above_low=True)
    step = _number(options, "step_seconds", 60.0, STEP_RANGE, problems)
    team_nodes = _team_nodes(options.get("team_nodes"), problems)
    config = _config(options.get("config"), problems)
    if problems or start is None:
        return None, problems
    request = TraceRequest(
        start=start,
        hours=hours or 24.0,
        nodes=nodes,
        load=load,
        gpus_per_node=gpus_per_node or 8,
        cap_hours=cap_hours or 24.0,
        step_seconds=step or 60.0,
        team_nodes=team_nodes,
        config=config,
    )
    return request, problems


def read_window(text: str, request: TraceRequest) -> list[TraceJob]:
    """The trace's jobs of the request's window."""
    return parse_trace(
        io.StringIO(text, newline=""),
        start=request.start,
        hours=request.hours,
        cap_hours=request.cap_hours,
    )


ProgressCallback = Callable[[float, str], None]


def run_trace(text: str, request: TraceRequest, on_progress: ProgressCallback) -> dict[str, Any]:
    """Replay the window through the engine, FIFO and FIFO with backfill; the stored
    result: the window's figures (WindowReplay.document, each run with its hourly
    timeline), `kind` "trace", the step, and the line that says what was replayed."""
    jobs = read_window(text, request)
    # a job ends at most `cap_hours` after the window's last arrival, unless it waited
    expected = request.hours + request.cap_hours
    order = list(SCHEDULERS)

    def progress(label: str, hours: float) -> None:
        index = order.index(label)
        part = min(hours / expected, 0.99)
        on_progress(
            (index + part) / len(order),
            f"{label}: {hours:g} h simulated (run {index + 1} of {len(order)})",
        )

    on_progress(0.0, f"{order[0]}: starting")
    window = replay_window(
        jobs,
        start=request.start,
        hours=request.hours,
        nodes=request.nodes,
        load=request.load,
        gpus_per_node=request.gpus_per_node,
        config=request.config,
        team_nodes=request.team_nodes,
        step_seconds=request.step_seconds,
        on_progress=progress,
    )
    return {
        "kind": "trace",
        **window.document(request.config),
        "hours": request.hours,
        "step_seconds": request.step_seconds,
        "header": window.header(request.step_seconds, request.config, dated=True),
    }


# ---------------------------------------------------------------- checking one option
def _window(request: TraceRequest) -> str:
    return f"{request.hours:g} hours from {request.start:%Y-%m-%d %H:%M}"


def _start(value: Any, problems: Problems) -> datetime | None:
    if value in (None, ""):
        problems.append(("start", "give the window's start, UTC, e.g. 2017-10-25T19:00"))
        return None
    if not isinstance(value, str):
        problems.append(("start", f"a time such as 2017-10-25T19:00, got {value!r}"))
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        problems.append(("start", str(exc)))
        return None


def _number(
    options: Mapping[str, Any],
    key: str,
    default: float | None,
    bounds: tuple[float, float],
    problems: Problems,
    *,
    above_low: bool = False,
    whole: bool = False,
) -> float | None:
    """Option `key`, a number within `bounds` (above the low one with `above_low`; a
    whole number with `whole`), or `default` when it is not given; None and a problem
    when it is wrong."""
    value = options.get(key)
    if value is None or value == "":
        return default
    low, high = bounds
    kind = "a whole number" if whole else "a number"
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or (whole and not float(value).is_integer())
    ):
        problems.append((key, f"must be {kind}, got {value!r}"))
        return None
    if value > high or value < low or (above_low and value <= low):
        word = "more than" if above_low else "at least"
        problems.append((key, f"must be {word} {low:g} and at most {high:g}, got {value:g}"))
        return None
    return float(value)


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _team_nodes(value: Any, problems: Problems) -> dict[str, int] | None:
    if value in (None, {}):
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str)
        and isinstance(v, int | float)
        and not isinstance(v, bool)
        and float(v).is_integer()
        and v >= 0
        for k, v in value.items()
    ):
        problems.append(
            ("team_nodes", 'each team\'s nodes, a whole number, e.g. {"vision": 10, "nlp": 5}')
        )
        return None
    return {k: int(v) for k, v in value.items()}


def _config(value: Any, problems: Problems) -> dict[str, Any]:
    if value in (None, {}):
        return trace_config({})
    if not isinstance(value, Mapping):
        problems.append(("config", 'pool settings as an object, e.g. {"consolidation": false}'))
        return {}
    if "policy" in value:
        problems.append(("config", "a trace replays the quota policy; leave `policy` out"))
        return {}
    try:  # the scenario loader knows every setting and its values
        trace_scenario("check", [], TraceCluster(1, 1, {}, dict(value)), 60.0)
    except ScenarioError as exc:
        problems.append(("config", str(exc).removeprefix("check: ").removeprefix("config: ")))
        return {}
    return trace_config(value)
