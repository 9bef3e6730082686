"""GPU usage over time (docs/usage.md): the query and the answer of /api/v1/usage/."""

from __future__ import annotations

from rest_framework import serializers

from scheduler_core.models import Node, NodePool, Project, Workload
from scheduler_core.selectors.gpu_usage import DEFAULT_WINDOW, SCOPE_FIELDS, WINDOWS, UsageScope


class UsageQuerySerializer(serializers.Serializer):
    """What to cover: everything you may see, narrowed by any of pool, project, node and
    workload; over a window. A name you may not see is refused like one that does not exist."""

    window = serializers.ChoiceField(
        choices=list(WINDOWS), default=DEFAULT_WINDOW,
        help_text="1h (a point a minute), 24h (a point per 15 minutes) or 7d (a point an hour).",
    )  # fmt: skip
    pool = serializers.SlugRelatedField(
        slug_field="name", queryset=NodePool.objects.all(), required=False,
        help_text="A pool's name.",
    )  # fmt: skip
    project = serializers.SlugRelatedField(
        slug_field="name", queryset=Project.objects.none(), required=False,
        help_text="A project's name.",
    )  # fmt: skip
    node = serializers.SlugRelatedField(
        slug_field="name", queryset=Node.objects.none(), required=False,
        help_text="A node's name.",
    )  # fmt: skip
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.none(), required=False, help_text="A workload's id."
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is None:  # the schema generator's instance
            return
        user = request.user
        self.fields["project"].queryset = Project.objects.visible_to(user)  # type: ignore[attr-defined]
        self.fields["node"].queryset = Node.objects.visible_to(user)  # type: ignore[attr-defined]
        self.fields["workload"].queryset = Workload.objects.visible_to(user)  # type: ignore[attr-defined]

    def validate(self, attrs: dict) -> dict:
        blank = [name for name in SCOPE_FIELDS if self.initial_data.get(name, None) == ""]
        if blank:
            raise serializers.ValidationError({name: ["may not be blank"] for name in blank})
        return attrs

    def scope(self) -> UsageScope:
        data = self.validated_data
        return UsageScope(
            pool=data.get("pool"), project=data.get("project"), node=data.get("node"),
            workload=data.get("workload"),
        )  # fmt: skip


class UsagePointSerializer(serializers.Serializer):
    """Means over one step of the window."""

    start = serializers.DateTimeField(help_text="Start of the step.")
    held_gpus = serializers.FloatField(help_text="GPUs held by runs (allocated), on average.")
    used_gpus = serializers.FloatField(
        help_text="GPUs actually busy: each GPU's utilisation x the share held (and the part "
        "nobody held), on average."
    )
    idle_gpus = serializers.FloatField(help_text="held_gpus - used_gpus, at least 0.")
    utilization = serializers.FloatField(
        allow_null=True, help_text="used / held, percent; null when nothing was held."
    )
    memory_used_mib = serializers.FloatField(help_text="GPU memory in use, MiB.")
    memory_total_mib = serializers.FloatField(help_text="GPU memory of the GPUs covered, MiB.")


class UsageHolderSerializer(serializers.Serializer):
    """A workload that held GPUs in the window."""

    workload = serializers.IntegerField(source="workload_id", help_text="The workload's id.")
    name = serializers.CharField(source="workload_name", help_text="The workload's name.")
    project = serializers.CharField(source="project_name", help_text="Its project's name.")
    gpu_hours = serializers.FloatField(help_text="GPU-hours held.")
    used_gpu_hours = serializers.FloatField(help_text="GPU-hours its GPUs were busy.")
    idle_gpu_hours = serializers.FloatField(help_text="GPU-hours held but idle.")
    utilization = serializers.FloatField(help_text="used / held, percent.")


class UsageHistorySerializer(serializers.Serializer):
    """GPUs held against GPUs used, and GPU memory, over a window; the idlest holders."""

    window = serializers.CharField(source="window.key", help_text="1h, 24h or 7d.")
    step_seconds = serializers.IntegerField(
        source="window.step", help_text="Seconds between two points."
    )
    resolution_seconds = serializers.IntegerField(
        source="resolution", help_text="The stored buckets read: 60 (minutes) or 3600 (hours)."
    )
    gpu_hours = serializers.FloatField(help_text="GPU-hours held over the window.")
    used_gpu_hours = serializers.FloatField(help_text="GPU-hours busy over the window.")
    points = UsagePointSerializer(
        many=True, help_text="Evenly spaced, oldest first; none after the last rolled-up minute."
    )
    idlest_holders = UsageHolderSerializer(
        many=True, source="holders",
        help_text="Up to 10 workloads, the most idle GPU-hours first.",
    )  # fmt: skip
