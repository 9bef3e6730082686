"""Departments, projects and their members."""

from __future__ import annotations

from typing import ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import (
    NameRelatedField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSlugField,
)
from api.serializers.base import StrictInputSerializer
from scheduler_core.choices import DepartmentRole, ProjectRole
from scheduler_core.models import Department

RANK_BOUND = 1_000_000
WEIGHT_MAX = 1_000_000.0


class MemberSerializer(serializers.Serializer):
    """A user's role in a project or department."""

    username = serializers.CharField(source="user.username", help_text="The member's username.")
    role = serializers.CharField(help_text="The member's role there.")


class QueueOwnerSerializer(serializers.Serializer):
    """What departments and projects show alike. The wording of a field's help may differ
    by level: a subclass gives it in `help_texts`."""

    help_texts: ClassVar[dict[str, str]] = {}

    id = serializers.IntegerField(help_text="Database id.")
    name = serializers.CharField(help_text="Unique name; used in URLs.")
    description = serializers.CharField(help_text="Free text.")
    rank = serializers.IntegerField(help_text="Higher rank is served over-quota GPUs first.")
    over_quota_weight = serializers.FloatField(
        help_text="Share of over-quota GPUs among peers of the same rank."
    )
    created_at = serializers.DateTimeField(help_text="When it was created.")
    members = MemberSerializer(source="memberships", many=True, help_text="Its members.")

    def get_fields(self):
        fields = super().get_fields()
        for name, text in self.help_texts.items():
            fields[name].help_text = text
        return fields


class DepartmentSerializer(QueueOwnerSerializer):
    """A department: the upper level of the queue tree, with projects under it."""

    help_texts: ClassVar[dict[str, str]] = {
        "name": "Unique name; used in URLs (/departments/<name>/).",
        "rank": "Departments of higher rank are served over-quota GPUs first.",
        "over_quota_weight": "Share of over-quota GPUs among departments of the same rank.",
        "members": "Department admins and viewers.",
    }

    projects = serializers.SerializerMethodField(help_text="Names of the department's projects.")

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_projects(self, department) -> list[str]:
        return sorted(p.name for p in department.projects.all())


class _OrgFields(StrictInputSerializer):
    description = StrictCharField(
        max_length=255, allow_blank=True, required=False, help_text="Free text."
    )
    rank = StrictIntegerField(
        min_value=-RANK_BOUND,
        max_value=RANK_BOUND,
        required=False,
        help_text="Higher rank is served over-quota GPUs first (default 0).",
    )
    over_quota_weight = StrictFloatField(
        max_value=WEIGHT_MAX,
        required=False,
        help_text="Relative share of over-quota GPUs among peers of the same rank (default 1).",
    )


class DepartmentCreateSerializer(_OrgFields):
    """A new department (system admins)."""

    name = StrictSlugField(
        max_length=63, help_text="Unique name: lowercase letters, digits and dashes."
    )


class DepartmentUpdateSerializer(_OrgFields):
    """Changes to a department; omitted fields stay as they are."""


class ProjectSerializer(QueueOwnerSerializer):
    """A project: the team queue workloads are submitted to."""

    help_texts: ClassVar[dict[str, str]] = {
        "name": "Unique name; used in URLs (/projects/<name>/).",
        "rank": "Projects of higher rank in a department are served over-quota GPUs first.",
        "over_quota_weight": "Share of over-quota GPUs among the department's projects of "
        "the same rank.",
        "members": "Researchers and viewers of the project.",
    }

    department = serializers.CharField(
        source="department.name", help_text="Name of the department it belongs to."
    )
    department_id = serializers.IntegerField(help_text="Id of the department it belongs to.")


class ProjectCreateSerializer(_OrgFields):
    """A new project in a department you manage."""

    department = NameRelatedField(
        noun="department",
        queryset=Department.objects.all(),
        help_text="Name of the department the project belongs to.",
    )
    name = StrictSlugField(
        max_length=63, help_text="Unique name: lowercase letters, digits and dashes."
    )


class ProjectUpdateSerializer(_OrgFields):
    """Changes to a project; omitted fields stay as they are."""


class ProjectMemberSetSerializer(StrictInputSerializer):
    """Add a user to a project, or change their role there."""

    username = StrictCharField(max_length=150, help_text="The user to add.")
    role = StrictChoiceField(
        choices=ProjectRole.choices, help_text="researcher (submits) or viewer (reads)."
    )


class DepartmentMemberSetSerializer(StrictInputSerializer):
    """Make a user an admin or viewer of a department."""

    username = StrictCharField(max_length=150, help_text="The user to add.")
    role = StrictChoiceField(
        choices=DepartmentRole.choices,
        help_text="admin (manages the department's projects and quotas) or viewer (reads).",
    )
