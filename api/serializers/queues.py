"""The queue view: who deserves what, who holds what, and who waits and why."""

from __future__ import annotations

from rest_framework import serializers

QUEUE_KINDS = [("department", "Department"), ("project", "Project")]


class QueueRowSerializer(serializers.Serializer):
    """One department or project queue in one pool, as the last scheduling cycle saw it."""

    kind = serializers.ChoiceField(
        choices=QUEUE_KINDS,
        help_text="department or project.",
    )
    id = serializers.IntegerField(help_text="Id of the department or project.")
    name = serializers.CharField(help_text="Its name.")
    # DRF takes declared fields off the class: no clash with the attribute of this name
    parent = serializers.CharField(  # type: ignore[assignment]
        allow_null=True, help_text="A project's department (null for a department)."
    )
    rank = serializers.IntegerField(help_text="Higher rank is served over-quota first.")
    over_quota_weight = serializers.FloatField(help_text="Share of over-quota GPUs.")
    deserved_gpus = serializers.FloatField(help_text="Deserved (guaranteed) GPUs.")
    limit_gpus = serializers.FloatField(allow_null=True, help_text="GPU limit (null: none).")
    fairshare_gpus = serializers.FloatField(
        help_text="GPUs it is entitled to now: deserved plus its share of idle GPUs."
    )
    allocated_gpus = serializers.FloatField(help_text="GPUs its running pods hold.")
    requested_gpus = serializers.FloatField(help_text="Allocated plus pending demand.")
    pending_demand_gpus = serializers.FloatField(help_text="GPUs its pending workloads want.")
    pending = serializers.IntegerField(help_text="Pending workloads.")
    running = serializers.IntegerField(help_text="Running workloads.")


class PendingWorkloadSerializer(serializers.Serializer):
    """A waiting workload and why it waits."""

    id = serializers.IntegerField(help_text="Workload id.")
    name = serializers.CharField(help_text="Workload name.")
    project = serializers.CharField(source="project.name", help_text="Project name.")
    department = serializers.CharField(
        source="project.department.name", help_text="Department name."
    )
    priority = serializers.IntegerField(help_text="Higher runs first.")
    total_gpus = serializers.FloatField(help_text="GPUs with every pod placed.")
    min_pods = serializers.IntegerField(help_text="Pods that must start together.")
    queue_position = serializers.IntegerField(
        allow_null=True, help_text="Place in its project's queue (1 = next)."
    )
    pending_reason = serializers.CharField(help_text="Why it waits, in plain words.")
    submitted_by = serializers.CharField(
        source="submitted_by.username", allow_null=True, default=None, help_text="Submitter."
    )
    submitted_at = serializers.DateTimeField(help_text="When it was submitted.")


class PoolRefSerializer(serializers.Serializer):
    """A pool, briefly."""

    id = serializers.IntegerField(help_text="Pool id.")
    name = serializers.CharField(help_text="Pool name.")
    policy = serializers.CharField(help_text="The pool's policy.")


class PoolQueuesSerializer(serializers.Serializer):
    """One pool's queues and its ordered pending list."""

    pool = PoolRefSerializer(help_text="The pool.")
    departments = QueueRowSerializer(many=True, help_text="Department queues you can see.")
    projects = QueueRowSerializer(many=True, help_text="Project queues you can see.")
    pending = PendingWorkloadSerializer(
        many=True,
        source="pending_page",
        help_text="Pending workloads that may run here, by project and queue position "
        "(the first `pending_limit`).",
    )
    pending_total = serializers.IntegerField(
        help_text="All pending workloads you can see that may run here."
    )
