"""Per-pool quotas of departments and projects."""

from __future__ import annotations

from rest_framework import serializers

from api.fields import NameRelatedField, StrictFloatField
from api.serializers.base import StrictInputSerializer
from scheduler_core.models import Department, NodePool, Project

QUOTA_MAX = 1e9


class QuotaSerializer(serializers.Serializer):
    """A department's or project's deserved resources and hard limits in one pool."""

    id = serializers.IntegerField(help_text="Database id.")
    pool = serializers.CharField(source="pool.name", help_text="Name of the pool.")
    pool_id = serializers.IntegerField(help_text="Id of the pool.")
    owner_type = serializers.CharField(
        source="owner_kind",
        read_only=True,
        help_text="Whether the quota belongs to a department or a project.",
    )
    department = serializers.CharField(
        source="department.name",
        allow_null=True,
        default=None,
        help_text="Name of the owning department (null for a project quota).",
    )
    project = serializers.CharField(
        source="project.name",
        allow_null=True,
        default=None,
        help_text="Name of the owning project (null for a department quota).",
    )
    gpus = serializers.FloatField(help_text="Deserved (guaranteed) GPUs.")
    cpu = serializers.FloatField(help_text="Deserved CPU cores.")
    memory = serializers.FloatField(help_text="Deserved memory in GiB.")
    limit_gpus = serializers.FloatField(
        allow_null=True, help_text="Most GPUs the queue may hold, over-quota included (null: none)."
    )
    limit_cpu = serializers.FloatField(allow_null=True, help_text="CPU limit (null: none).")
    limit_memory = serializers.FloatField(
        allow_null=True, help_text="Memory limit in GiB (null: none)."
    )
    updated_at = serializers.DateTimeField(help_text="When it last changed.")


class QuotaValuesSerializer(StrictInputSerializer):
    """Quota values; omitted ones stay as they are, a null limit removes the limit."""

    gpus = StrictFloatField(max_value=QUOTA_MAX, required=False, help_text="Deserved GPUs.")
    cpu = StrictFloatField(max_value=QUOTA_MAX, required=False, help_text="Deserved CPU cores.")
    memory = StrictFloatField(
        max_value=QUOTA_MAX, required=False, help_text="Deserved memory in GiB."
    )
    limit_gpus = StrictFloatField(
        max_value=QUOTA_MAX,
        required=False,
        allow_null=True,
        help_text="GPU limit, at least the deserved GPUs (null removes it).",
    )
    limit_cpu = StrictFloatField(
        max_value=QUOTA_MAX,
        required=False,
        allow_null=True,
        help_text="CPU limit, at least the deserved cores (null removes it).",
    )
    limit_memory = StrictFloatField(
        max_value=QUOTA_MAX,
        required=False,
        allow_null=True,
        help_text="Memory limit in GiB, at least the deserved memory (null removes it).",
    )


class QuotaSetSerializer(QuotaValuesSerializer):
    """Set the quota of exactly one department or project in a pool (creates it if new)."""

    pool = NameRelatedField(
        noun="pool", queryset=NodePool.objects.all(), help_text="Name of the pool."
    )
    department = NameRelatedField(
        noun="department",
        queryset=Department.objects.all(),
        required=False,
        help_text="Name of the department (give this or project).",
    )
    project = NameRelatedField(
        noun="project",
        queryset=Project.objects.select_related("department"),
        required=False,
        help_text="Name of the project (give this or department).",
    )

    def validate(self, attrs):
        if ("department" in attrs) == ("project" in attrs):
            raise serializers.ValidationError(
                {"project": ["give exactly one of department or project"]}
            )
        # The service takes either as its `owner`.
        attrs["owner"] = attrs.pop("department", None) or attrs.pop("project")
        return attrs
