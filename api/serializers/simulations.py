"""What-if runs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import StrictCharField, StrictChoiceField, StrictIntegerField
from api.serializers.base import StrictInputSerializer
from scheduler_core.choices import SimulationSource, SimulationStatus

CHANGE_LIST = {"type": "array", "items": {"type": "object", "additionalProperties": True}}
CHANGES_SCHEMA = {
    "type": "object",
    "description": (
        "Changes to try, compared with the unchanged cluster. Every key is optional: "
        '`quotas` [{"project"|"department", "pool", "gpus", "limit_gpus", ...}], '
        '`weights` [{"project"|"department", "over_quota_weight", "rank"}], '
        '`pools` [{"pool", "policy", "placement", "preemption", ...}], '
        '`add_nodes` [{"name", "pool", "gpus", "cpu", "memory", "labels", "count"}], '
        '`remove_nodes` ["node-name", ...]. Errors name the item, e.g. '
        "`changes.quotas[0].gpus`."
    ),
    "properties": {
        "quotas": {**CHANGE_LIST, "description": "Quota changes."},
        "weights": {**CHANGE_LIST, "description": "Rank and over-quota weight changes."},
        "pools": {**CHANGE_LIST, "description": "Pool setting changes."},
        "add_nodes": {**CHANGE_LIST, "description": "Nodes to add."},
        "remove_nodes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Names of nodes to take away at time 0.",
        },
    },
    "additionalProperties": False,
}
TRACE_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": (
        "For source=trace: which window of the trace to replay, on what cluster, with "
        "which pool settings. `start` is required; `nodes` or `load` sizes the cluster."
    ),
    "properties": {
        "start": {"type": "string", "description": "Window start, UTC: 2017-10-25T19:00."},
        "hours": {"type": "number", "description": "Window length (default 24, at most 168)."},
        "nodes": {"type": "integer", "nullable": True, "description": "Nodes (1 to 512)."},
        "load": {
            "type": "number",
            "nullable": True,
            "description": "Instead of nodes: size the cluster for this offered load.",
        },
        "gpus_per_node": {"type": "integer", "description": "GPUs per node (default 8)."},
        "cap_hours": {"type": "number", "description": "Longest job, hours (default 24)."},
        "step_seconds": {"type": "number", "description": "Seconds between cycles (60)."},
        "team_nodes": {
            "type": "object",
            "nullable": True,
            "additionalProperties": {"type": "integer"},
            "description": "Nodes per team: deserved shares in proportion (default equal).",
        },
        "config": {
            "type": "object",
            "additionalProperties": True,
            "description": "Pool settings, as a scenario's `config` takes them (FORMAT.md).",
        },
    },
    "additionalProperties": False,
}
RESULT_SCHEMA = {
    "type": "object",
    "additionalProperties": True,
    "nullable": True,
    "description": (
        "When succeeded: {horizon, step_seconds, changes, changes_text, runs: {baseline, "
        "changed?}, comparison?} with per-run metrics (waiting times, utilisation, "
        "preemptions per project). Projects you cannot see are merged into one row. "
        "A trace run: {kind: trace, start, jobs, cluster, offered_load, config, quotas, "
        "header, runs: {fairway, fifo, fifo+backfill}} with each run's figures (makespan, "
        "completion and queueing times, utilisation, fairness, preemptions, moves, lost "
        "GPU-hours, teams, an hourly timeline). "
        "Null until the run has succeeded."
    ),
}


FIGURES_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": (
        "A succeeded trace run's figures side by side, as `manage.py replay_trace` prints "
        "them: the schedulers (the engine first), and per figure its label and one value "
        "per scheduler, formatted. Null for other runs."
    ),
    "properties": {
        "schedulers": {"type": "array", "items": {"type": "string"}},
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "figure": {"type": "string"},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


@extend_schema_field(CHANGES_SCHEMA)
class ChangesField(serializers.JSONField):
    """The `changes` object, checked in depth by the simulation service."""


@extend_schema_field(TRACE_SCHEMA)
class TraceOptionsField(serializers.JSONField):
    """A trace run's options, checked in depth by the simulation service."""


@extend_schema_field(FIGURES_SCHEMA)
class FiguresField(serializers.JSONField):
    """A trace run's figures side by side."""


@extend_schema_field(RESULT_SCHEMA)
class ResultField(serializers.JSONField):
    """A run's result, as the requesting user may see it."""


class SimulationSerializer(serializers.Serializer):
    """A what-if run and its progress."""

    id = serializers.IntegerField(help_text="Run id; used in URLs.")
    name = serializers.CharField(help_text="Your name for the run.")
    # A declared field leaves the class body (SerializerMetaclass collects it), so it does
    # not replace Field.source as the stubs assume.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=SimulationSource.choices,
        help_text="A scenario file, a copy of the live cluster, or a job trace.",
    )
    horizon = serializers.IntegerField(help_text="Simulated seconds (a trace: its window).")
    changes = ChangesField(help_text="The changes tried (normalised).")
    trace_options = TraceOptionsField(help_text="A trace run's options (normalised).")
    status = serializers.ChoiceField(
        choices=SimulationStatus.choices, help_text="queued, running, succeeded or failed."
    )
    progress = serializers.FloatField(help_text="0..1 while it runs.")
    progress_message = serializers.CharField(help_text="What it is doing now.")
    error = serializers.CharField(help_text="Why it failed (empty otherwise).")
    created_by = serializers.CharField(
        source="created_by.username", allow_null=True, default=None, help_text="Who started it."
    )
    created_at = serializers.DateTimeField(help_text="When it was created.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="When a worker started it.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When it ended.")


class SimulationDetailSerializer(SimulationSerializer):
    """A what-if run with its result."""

    result = ResultField(source="visible_result", help_text="The outcome (see the schema).")
    figures = FiguresField(
        source="visible_figures", help_text="A trace run's figures side by side (see the schema)."
    )


class SimulationScenarioSerializer(serializers.Serializer):
    """The scenario a run replays (for a live copy: the cluster as it was)."""

    scenario_text = serializers.CharField(
        help_text="YAML or JSON scenario (FORMAT.md); replay it with `manage.py simulate`."
    )


def _input_text(max_length: int, help_text: str) -> StrictCharField:
    """What a run replays, as text taken as it is (a scenario, a trace); optional."""
    return StrictCharField(
        max_length=max_length,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text=help_text,
    )


class SimulationCreateSerializer(StrictInputSerializer):
    """A what-if run to queue."""

    name = StrictCharField(max_length=120, help_text="A name, e.g. 'vision quota 4'.")
    # A declared field leaves the class body (SerializerMetaclass collects it), so it does
    # not replace Field.source as the stubs assume.
    source = StrictChoiceField(  # type: ignore[assignment]
        choices=SimulationSource.choices,
        help_text="scenario: replay `scenario_text`; live: copy the cluster as it is now; "
        "trace: replay `trace_text` with the options `trace`.",
    )
    scenario_text = _input_text(
        5_000_000, "For source=scenario: a scenario in YAML or JSON (see FORMAT.md)."
    )
    changes = ChangesField(required=False, default=None, help_text="Changes to try.")
    trace_text = _input_text(
        8_000_000,
        "For source=trace: a job trace, CSV with the columns timestamp (UTC), duration "
        "(seconds), num_gpus and cluster (the team), as Philly's.",
    )
    trace = TraceOptionsField(
        required=False, default=None, help_text="For source=trace: its options."
    )
    horizon = StrictIntegerField(
        min_value=60,
        max_value=30 * 24 * 3600,
        required=False,
        default=3600,
        help_text="Simulated seconds to replay (60 s to 30 days, default 3600).",
    )


class SimulationPreviewSerializer(StrictInputSerializer):
    """Changes to try at once on a copy of the live cluster (nothing is stored)."""

    changes = ChangesField(required=False, default=None, help_text="Changes to try.")
    horizon = StrictIntegerField(
        min_value=60,
        max_value=24 * 3600,
        required=False,
        default=900,
        help_text="Simulated seconds (60 s to one day, default 900).",
    )


class SimulationPreviewResultSerializer(serializers.Serializer):
    """The outcome of a preview."""

    result = ResultField(help_text="The outcome, as for a finished live run.")
