"""Workloads: what a submission may say, and what a workload looks like."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import (
    LabelMapField,
    NameRelatedField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSlugField,
    StringMapField,
)
from api.serializers.base import StrictInputSerializer
from scheduler_core.choices import WorkloadKind, WorkloadStatus
from scheduler_core.models import NodePool, Project
from scheduler_core.services.workloads import WorkloadRequest

MAX_PODS = 10_000
MAX_GPUS_PER_POD = 1024
MAX_CPU_PER_POD = 100_000
MAX_MEMORY_PER_POD = 1e8
PRIORITY_BOUND = 1_000_000
MAX_SECONDS = 10 * 365 * 24 * 3600
MAX_BULK = 500
FLAT_SHAPE_FIELDS = ("pods", "min_pods", "gpus", "cpu", "memory")


class WorkloadGroupSerializer(StrictInputSerializer):
    """One pod group of a multi-group gang (e.g. a launcher and its workers)."""

    name = StrictSlugField(max_length=63, help_text="Group name, unique within the workload.")
    pods = StrictIntegerField(
        min_value=1, max_value=MAX_PODS, help_text="Pods in the group (at most)."
    )
    min_pods = StrictIntegerField(
        min_value=1,
        max_value=MAX_PODS,
        required=False,
        help_text="Pods that must start together (default: all of them).",
    )
    gpus = StrictFloatField(
        max_value=MAX_GPUS_PER_POD,
        required=False,
        default=0,
        help_text="GPUs per pod: whole GPUs, or a fraction below 1 of a shared device.",
    )
    cpu = StrictFloatField(
        max_value=MAX_CPU_PER_POD, required=False, default=0, help_text="CPU cores per pod."
    )
    memory = StrictFloatField(
        max_value=MAX_MEMORY_PER_POD, required=False, default=0, help_text="GiB per pod."
    )


class WorkloadSpecSerializer(StrictInputSerializer):
    """What the runtime needs to run the workload."""

    image = StrictCharField(
        max_length=255, required=False, allow_blank=True, help_text="Container image."
    )
    command = serializers.ListField(
        child=StrictCharField(max_length=4096, allow_blank=True),
        max_length=256,
        required=False,
        help_text="Command and arguments.",
    )
    env = StringMapField(required=False, help_text="Environment variables.")
    duration = StrictFloatField(
        max_value=MAX_SECONDS,
        required=False,
        help_text="Seconds of work for simulated runs (the workload completes after this "
        "much running time).",
    )
    checkpoint_every = StrictFloatField(
        max_value=MAX_SECONDS,
        required=False,
        help_text="Seconds between checkpoints: a preempted run resumes from the last one.",
    )


class WorkloadSubmitSerializer(StrictInputSerializer):
    """A workload to queue. Give either the flat pod shape (pods, min_pods, gpus, cpu,
    memory) or `groups`, not both."""

    project = NameRelatedField(
        noun="project",
        queryset=Project.objects.select_related("department"),
        help_text="Name of a project you may submit to.",
    )
    name = StrictSlugField(max_length=100, help_text="Name, unique within the project.")
    kind = StrictChoiceField(
        choices=WorkloadKind.choices,
        required=False,
        default=WorkloadKind.TRAINING,
        help_text="Decides the default priority and preemptibility (default training).",
    )
    priority = StrictIntegerField(
        min_value=-PRIORITY_BOUND,
        max_value=PRIORITY_BOUND,
        required=False,
        help_text="Higher runs first (defaults by kind: training 50, interactive 100, "
        "inference 125).",
    )
    preemptible = StrictBooleanField(
        required=False,
        help_text="Whether it may be evicted for others (default by kind/priority).",
    )
    pods = StrictIntegerField(
        min_value=1, max_value=MAX_PODS, required=False, help_text="Pods (default 1)."
    )
    min_pods = StrictIntegerField(
        min_value=1,
        max_value=MAX_PODS,
        required=False,
        help_text="Pods that must start together; between min_pods and pods the workload "
        "is elastic (default: all pods, a strict gang).",
    )
    gpus = StrictFloatField(
        max_value=MAX_GPUS_PER_POD,
        required=False,
        help_text="GPUs per pod: whole GPUs, or a fraction below 1 of a shared device.",
    )
    cpu = StrictFloatField(max_value=MAX_CPU_PER_POD, required=False, help_text="Cores per pod.")
    memory = StrictFloatField(
        max_value=MAX_MEMORY_PER_POD, required=False, help_text="GiB per pod."
    )
    groups = WorkloadGroupSerializer(
        many=True,
        required=False,
        max_length=32,
        help_text="Pod groups of a multi-group gang; each starts its min_pods together.",
    )
    pools = serializers.ListField(
        child=NameRelatedField(noun="pool", queryset=NodePool.objects.all()),
        max_length=32,
        required=False,
        help_text="Candidate pools in order of preference (default: any pool).",
    )
    node_selector = LabelMapField(
        required=False, help_text="Node labels every pod's node must have."
    )
    weight = StrictFloatField(
        max_value=1_000_000,
        required=False,
        help_text="Share among the project's workloads of the same priority (default 1).",
    )
    backoff_limit = StrictIntegerField(
        max_value=1000,
        required=False,
        allow_null=True,
        help_text="Restarts after node faults before the workload fails (null: no limit).",
    )
    spec = WorkloadSpecSerializer(required=False, help_text="What the runtime needs.")

    def validate(self, attrs):
        errors: dict[str, list[str]] = {}
        if attrs.get("groups"):
            for key in FLAT_SHAPE_FIELDS:
                if key in attrs:
                    errors[key] = ["give either groups or the flat pod shape, not both"]
        pools = attrs.get("pools") or []
        seen: set[int] = set()
        for i, pool in enumerate(pools):
            if pool.pk in seen:
                errors[f"pools[{i}]"] = [f"pool {pool.name!r} is listed twice"]
            seen.add(pool.pk)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    @staticmethod
    def to_request(attrs: dict) -> WorkloadRequest:
        """The service's request object."""
        values = {k: v for k, v in attrs.items() if k not in {"spec", "groups"}}
        return WorkloadRequest(
            **values,
            groups=[dict(g) for g in attrs.get("groups") or []],
            spec=_plain(attrs.get("spec") or {}),
        )


def _plain(value):
    """OrderedDicts and ReturnLists into plain JSON types."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class WorkloadBulkSubmitSerializer(StrictInputSerializer):
    """Many workloads in one request: all are queued, or none if any is invalid."""

    workloads = WorkloadSubmitSerializer(
        many=True,
        min_length=1,
        max_length=MAX_BULK,
        help_text=f"The workloads to queue (1 to {MAX_BULK}).",
    )


class WorkloadPrioritySerializer(StrictInputSerializer):
    """A new priority."""

    priority = StrictIntegerField(
        min_value=-PRIORITY_BOUND,
        max_value=PRIORITY_BOUND,
        help_text="Higher runs first; takes effect at the next scheduling cycle.",
    )


class PodGroupSerializer(serializers.Serializer):
    """A pod group as stored."""

    name = serializers.CharField(help_text="Group name.")
    pods = serializers.IntegerField(help_text="Pods in the group.")
    min_pods = serializers.IntegerField(help_text="Pods that must start together.")
    gpus = serializers.FloatField(help_text="GPUs per pod.")
    cpu = serializers.FloatField(help_text="CPU cores per pod.")
    memory = serializers.FloatField(help_text="GiB per pod.")


class PlacementSerializer(serializers.Serializer):
    """One running pod: which node and which GPU devices."""

    group = serializers.CharField(help_text="Pod group.")
    pod_index = serializers.IntegerField(help_text="Index of the pod in its group.")
    node = serializers.CharField(source="node.name", help_text="Node name.")
    node_id = serializers.IntegerField(help_text="Node id.")
    gpu_devices = serializers.ListField(
        child=serializers.IntegerField(), help_text="GPU device indices on the node."
    )
    gpu_fraction = serializers.FloatField(
        help_text="Share of each device (1 = whole GPUs; below 1 = a shared device)."
    )


class WorkloadSerializer(serializers.Serializer):
    """A workload: what it asks for, and where it is in its life."""

    id = serializers.IntegerField(help_text="Database id; used in URLs.")
    name = serializers.CharField(help_text="Name, unique within the project.")
    project = serializers.CharField(source="project.name", help_text="Project name.")
    project_id = serializers.IntegerField(help_text="Project id.")
    department = serializers.CharField(
        source="project.department.name", help_text="Department of the project."
    )
    kind = serializers.ChoiceField(choices=WorkloadKind.choices, help_text="What it is for.")
    priority = serializers.IntegerField(help_text="Higher runs first.")
    preemptible = serializers.BooleanField(help_text="Whether it may be evicted for others.")
    pods = serializers.IntegerField(help_text="Pods asked for (all groups).")
    min_pods = serializers.IntegerField(help_text="Pods that must start together.")
    gpus = serializers.FloatField(help_text="GPUs per pod (0 for a multi-group workload).")
    cpu = serializers.FloatField(help_text="Cores per pod (0 for a multi-group workload).")
    memory = serializers.FloatField(help_text="GiB per pod (0 for a multi-group workload).")
    groups = PodGroupSerializer(
        many=True, help_text="Pod groups of a multi-group gang (empty for a single group)."
    )
    total_gpus = serializers.FloatField(help_text="GPUs with every pod placed.")
    pools = serializers.SerializerMethodField(
        help_text="Candidate pools in order of preference (empty: any pool)."
    )
    node_selector = serializers.DictField(
        child=serializers.CharField(), help_text="Node labels its nodes must have."
    )
    weight = serializers.FloatField(help_text="Share among equal-priority workloads.")
    backoff_limit = serializers.IntegerField(
        allow_null=True, help_text="Restarts allowed after node faults (null: no limit)."
    )
    restarts = serializers.IntegerField(help_text="Restarts after node faults so far.")
    spec = serializers.DictField(
        help_text="Runtime spec: image, command, env, duration, checkpoint_every."
    )
    status = serializers.ChoiceField(
        choices=WorkloadStatus.choices, help_text="Where it is in its life."
    )
    pending_reason = serializers.CharField(
        help_text="Why it is not running, in plain words (empty when running)."
    )
    queue_position = serializers.IntegerField(
        allow_null=True, help_text="Its place in its project's queue (1 = next), when pending."
    )
    submitted_by = serializers.CharField(
        source="submitted_by.username",
        allow_null=True,
        default=None,
        help_text="Who submitted it.",
    )
    submitted_at = serializers.DateTimeField(help_text="When it was submitted.")
    started_at = serializers.DateTimeField(
        allow_null=True, help_text="When it last started running."
    )
    finished_at = serializers.DateTimeField(
        allow_null=True, help_text="When it completed, failed or was cancelled."
    )
    progress_seconds = serializers.FloatField(
        help_text="Running time saved at the last checkpoint (simulated runs)."
    )
    version = serializers.IntegerField(help_text="Bumped on every change.")
    running_pods = serializers.SerializerMethodField(help_text="Pods placed on nodes now.")
    nodes = serializers.SerializerMethodField(help_text="Names of the nodes its pods run on.")

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_pools(self, workload) -> list[str]:
        return [c.pool.name for c in workload.pool_choices.all()]

    @extend_schema_field(OpenApiTypes.INT)
    def get_running_pods(self, workload) -> int:
        return len(workload.allocations.all())

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_nodes(self, workload) -> list[str]:
        return sorted({a.node.name for a in workload.allocations.all()})


class WorkloadDetailSerializer(WorkloadSerializer):
    """A workload with every pod's node and GPU devices."""

    placements = PlacementSerializer(
        source="allocations", many=True, help_text="Running pods with their nodes and devices."
    )
