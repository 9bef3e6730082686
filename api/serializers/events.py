"""Scheduling events."""

from __future__ import annotations

from rest_framework import serializers

from scheduler_core.choices import EventType


class EventSerializer(serializers.Serializer):
    """Something a user would care about: submitted, allocated, preempted (and why), ..."""

    id = serializers.IntegerField(help_text="Event id.")
    type = serializers.ChoiceField(choices=EventType.choices, help_text="What happened.")
    at = serializers.DateTimeField(source="created_at", help_text="When it happened.")
    reason = serializers.CharField(help_text="Why, in plain words.")
    project_id = serializers.IntegerField(allow_null=True, help_text="Project concerned.")
    project = serializers.CharField(
        source="project.name", allow_null=True, default=None, help_text="Project name."
    )
    department_id = serializers.IntegerField(
        allow_null=True, help_text="Department concerned (an event about its own quota)."
    )
    department = serializers.CharField(
        source="department.name", allow_null=True, default=None, help_text="Department name."
    )
    workload_id = serializers.IntegerField(allow_null=True, help_text="Workload concerned.")
    workload = serializers.CharField(
        source="workload.name", allow_null=True, default=None, help_text="Workload name."
    )
    pool_id = serializers.IntegerField(allow_null=True, help_text="Pool concerned.")
    pool = serializers.CharField(
        source="pool.name", allow_null=True, default=None, help_text="Pool name."
    )
    node_id = serializers.IntegerField(allow_null=True, help_text="Node concerned.")
    node = serializers.CharField(
        source="node.name", allow_null=True, default=None, help_text="Node name."
    )
    details = serializers.DictField(
        help_text="Structured details (depend on the type). A preemption names the workload "
        "it made room for (`by`) and its project (`by_project_id`) only to those who may see "
        "that project; others read a neutral reason."
    )
