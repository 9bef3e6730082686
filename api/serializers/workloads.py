"""Workloads: what a submission may say, and what a workload looks like."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import NameRelatedField, StrictSlugField, schema_field
from api.serializers.base import SchemaInputSerializer, StrictInputSerializer
from scheduler_core.choices import WorkloadKind, WorkloadStatus
from scheduler_core.engine.transitions import DEFAULT_FAILED_RUN_RESTARTS
from scheduler_core.models import NodePool, Project
from scheduler_core.schemas.workloads import NewPriority, WorkloadSubmission
from scheduler_core.selectors.ports import open_ports
from scheduler_core.services.workloads import WorkloadRequest

MAX_BULK = 500


def _documented(name: str, help_text: str, **kwargs) -> serializers.Field:
    return schema_field(WorkloadSubmission, name, help_text=help_text, **kwargs)


class WorkloadSubmitSerializer(SchemaInputSerializer):
    """A workload to queue. Give either the flat pod shape (pods, min_pods, gpus, cpu,
    memory) or `groups`, not both. Its shape is checked by the schema layer
    (scheduler_core.schemas.workloads), as for every other way of submitting."""

    schema = WorkloadSubmission

    project = NameRelatedField(
        noun="project",
        queryset=Project.objects.select_related("department"),
        help_text="Name of a project you may submit to.",
    )
    name = StrictSlugField(max_length=100, help_text="Name, unique within the project.")
    pools = serializers.ListField(
        child=NameRelatedField(noun="pool", queryset=NodePool.objects.all()),
        max_length=32,
        required=False,
        help_text="Candidate pools in order of preference (default: any pool).",
    )
    kind = _documented(
        "kind",
        "Decides the default priority and preemptibility (default training).",
        choices=WorkloadKind.choices,
    )
    priority = _documented(
        "priority",
        "Higher runs first (defaults by kind: training 50, interactive 100, inference 125).",
    )
    preemptible = _documented(
        "preemptible", "Whether it may be evicted for others (default by kind/priority)."
    )
    pods = _documented("pods", "Pods (default 1).")
    min_pods = _documented(
        "min_pods",
        "Pods that must start together; between min_pods and pods the workload is elastic "
        "(default: all pods, a strict gang).",
    )
    gpus = _documented(
        "gpus", "GPUs per pod: whole GPUs, or a fraction below 1 of a shared device."
    )
    cpu = _documented("cpu", "Cores per pod.")
    memory = _documented("memory", "GiB per pod.")
    groups = _documented(
        "groups", "Pod groups of a multi-group gang; each starts its min_pods together."
    )
    node_selector = _documented("node_selector", "Node labels every pod's node must have.")
    weight = _documented(
        "weight", "Share among the project's workloads of the same priority (default 1)."
    )
    backoff_limit = _documented(
        "backoff_limit",
        "Restarts after node faults or failed runs (a non-zero exit) before the workload "
        f"fails (null: node faults always restart it, failed runs {DEFAULT_FAILED_RUN_RESTARTS} "
        "times).",
    )
    spec = _documented(
        "spec",
        "What the runtime needs: image, command (a line or its words), env, ports (a list of "
        "{name, protocol: http}: each pod serves them, opened through /proxy/), duration "
        "(seconds of work for simulated runs), checkpoint_every (seconds).",
    )

    def validate(self, attrs):
        pools = attrs.get("pools") or []
        seen: set[int] = set()
        errors: dict[str, list[str]] = {}
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
        return WorkloadRequest.from_shape(
            project=attrs["project"],
            name=attrs["name"],
            pools=attrs.get("pools") or [],
            shape=attrs["shape"],
        )


class WorkloadBulkSubmitSerializer(StrictInputSerializer):
    """Many workloads in one request: all are queued, or none if any is invalid."""

    workloads: serializers.ListSerializer[Any] = serializers.ListSerializer(
        child=WorkloadSubmitSerializer(),
        min_length=1,
        max_length=MAX_BULK,
        help_text=f"The workloads to queue (1 to {MAX_BULK}).",
    )


class WorkloadPrioritySerializer(StrictInputSerializer):
    """A new priority (checked by workload_set_priority)."""

    priority = schema_field(
        NewPriority,
        "priority",
        required=True,
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
        allow_null=True,
        help_text="Restarts allowed after node faults or failed runs (null: faults always, "
        f"failed runs {DEFAULT_FAILED_RUN_RESTARTS} times).",
    )
    restarts = serializers.IntegerField(
        help_text="Restarts after node faults or failed runs so far."
    )
    preemptions = serializers.IntegerField(
        help_text="Times reclaim or priority preemption evicted it so far."
    )
    spec = serializers.DictField(
        help_text="Runtime spec: image, command, env, ports, duration, checkpoint_every."
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


class OpenPortSerializer(serializers.Serializer):
    """A port of a running pod, opened through Fairway's proxy."""

    pod = serializers.CharField(help_text="The pod (group-index, e.g. main-0).")
    name = serializers.CharField(help_text="The port's name, as the spec declares it.")
    path = serializers.CharField(
        help_text="Where Fairway serves it: /proxy/<workload>/<pod>/<port>/ on this server "
        "(signed in to the console, for users who may see the workload)."
    )
    host = serializers.CharField(help_text="Where the pod listens: its node's address...")
    port = serializers.IntegerField(help_text="...and the port its node gave it.")


class WorkloadDetailSerializer(WorkloadSerializer):
    """A workload with every pod's node and GPU devices, and its open ports."""

    placements = PlacementSerializer(
        source="allocations", many=True, help_text="Running pods with their nodes and devices."
    )
    ports = serializers.SerializerMethodField(
        help_text="The ports its running pods serve (spec.ports), each with its proxy path."
    )

    @extend_schema_field(OpenPortSerializer(many=True))
    def get_ports(self, workload) -> list[dict[str, Any]]:
        return [OpenPortSerializer(p).data for p in open_ports(workload)]
