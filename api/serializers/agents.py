"""Node agents: registration, join tokens, GPU samples, pods' logs."""

from __future__ import annotations

from rest_framework import serializers

from api.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSlugField,
)
from api.serializers.base import StrictInputSerializer

MAX_TAIL = 100_000


class DeviceSerializer(serializers.Serializer):
    """A GPU an agent found."""

    index = StrictIntegerField(max_value=1023, help_text="Device index on the node.")
    uuid = StrictCharField(max_length=128, help_text="The device's UUID.")
    model = StrictCharField(max_length=64, help_text="GPU model, e.g. H100.")
    memory_mib = StrictIntegerField(help_text="Memory in MiB.")


class AgentRegisterSerializer(StrictInputSerializer):
    """An agent registering its node with a join token."""

    join_token = StrictCharField(max_length=128, help_text="The join token an admin made.")
    hostname = StrictSlugField(
        max_length=63, help_text="The node's name: lowercase letters, digits and dashes."
    )
    address = StrictCharField(
        max_length=255, allow_blank=True, required=False, default="",
        help_text="Where the node's pods reach each other.",
    )  # fmt: skip
    devices = DeviceSerializer(many=True, help_text="Its GPUs.")
    cpu = StrictFloatField(max_value=1_000_000, help_text="CPU cores.")
    memory_gib = StrictFloatField(max_value=1e9, help_text="Memory in GiB.")
    agent_version = StrictCharField(max_length=32, help_text="Version of fairway-agent.")
    capabilities = serializers.DictField(
        required=False, default=dict, help_text='What it can run, e.g. {"containers": true}.'
    )
    node_token = StrictCharField(
        max_length=128, required=False, default="",
        help_text="The node's current credential: needed to register a node that has one "
        "again (or an admin revokes it first).",
    )  # fmt: skip


class AgentRegisteredSerializer(serializers.Serializer):
    """The registered node and its credential: the agent stores it, it is never shown again."""

    node = serializers.CharField(help_text="The node's name.")
    pool = serializers.CharField(help_text="Its pool.")
    node_token = serializers.CharField(
        help_text="The node credential: `Authorization: Bearer <node_token>` on /ws/agents/."
    )


class JoinTokenSerializer(serializers.Serializer):
    """A join token (never its secret, shown once at creation)."""

    id = serializers.IntegerField(help_text="Token id; used to revoke it.")
    prefix = serializers.CharField(help_text="First characters of the token, to recognise it.")
    description = serializers.CharField(help_text="What it is for.")
    created_by = serializers.CharField(
        source="created_by.username", allow_null=True, default=None, help_text="Who made it."
    )
    created_at = serializers.DateTimeField(help_text="When it was made.")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="When it stops working.")
    revoked_at = serializers.DateTimeField(allow_null=True, help_text="When it was revoked.")
    last_used_at = serializers.DateTimeField(
        allow_null=True, help_text="When a node last registered with it."
    )
    single_use = serializers.BooleanField(help_text="Used up by the first node it registers.")
    state = serializers.CharField(help_text="active, expired, used or revoked.")


class JoinTokenCreatedSerializer(JoinTokenSerializer):
    """A new join token with its secret: shown only in this response."""

    token = serializers.CharField(help_text="The secret. Shown only once.")
    command = serializers.CharField(help_text="What to run on a node to register it.")


class JoinTokenCreateSerializer(StrictInputSerializer):
    """A new join token for the pool."""

    description = StrictCharField(
        max_length=255, allow_blank=True, required=False, default="", help_text="What it is for."
    )
    expires_in = StrictIntegerField(
        min_value=60, max_value=366 * 86400, required=False, allow_null=True, default=None,
        help_text="Seconds until it stops working (default: JOIN_TOKEN_TTL, a day).",
    )  # fmt: skip
    single_use = StrictBooleanField(
        required=False, default=False, help_text="Used up by the first node it registers."
    )


class GpuSampleSerializer(serializers.Serializer):
    """A GPU's latest utilisation and memory, as its agent measured them."""

    index = serializers.IntegerField(help_text="Device index.")
    at = serializers.DateTimeField(help_text="When it was measured.")
    utilization = serializers.FloatField(help_text="Percent busy.")
    memory_used_mib = serializers.FloatField(help_text="Memory in use, MiB.")
    memory_total_mib = serializers.FloatField(help_text="Memory, MiB.")


class LogQuerySerializer(serializers.Serializer):
    """What part of the logs to read (query parameters; others are ignored)."""

    pod = serializers.RegexField(
        r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?-[0-9]+$", max_length=80, required=False,
        error_messages={"invalid": "name a pod as GROUP-INDEX, e.g. main-0"},
        help_text="Only this pod (GROUP-INDEX, e.g. main-0).",
    )  # fmt: skip
    since = serializers.IntegerField(
        min_value=0, required=False, default=0, help_text="Byte offset to read from."
    )
    tail = serializers.IntegerField(
        min_value=1, max_value=MAX_TAIL, required=False, help_text="Only the last N lines."
    )


class PodLogSerializer(serializers.Serializer):
    """The output of the newest run of one pod."""

    pod = serializers.CharField(help_text="GROUP-INDEX, e.g. main-0.")
    run = serializers.IntegerField(source="run.pk", help_text="The run's id.")
    node = serializers.CharField(source="run.node.name", help_text="The node it runs on.")
    offset = serializers.IntegerField(help_text="Byte offset of the first byte of `text`.")
    next_offset = serializers.IntegerField(
        help_text="Byte offset after `text`: pass it as `since` to read on."
    )
    text = serializers.CharField(help_text="The output (stdout and stderr interleaved).")
    state = serializers.CharField(source="run.state", help_text="The run's state.")
    exit_code = serializers.IntegerField(
        source="run.exit_code", allow_null=True, help_text="Its exit code, once it exited."
    )


class WorkloadLogsSerializer(serializers.Serializer):
    """The workload's logs, pod by pod."""

    pods = PodLogSerializer(many=True, help_text="One entry per pod that has run.")
