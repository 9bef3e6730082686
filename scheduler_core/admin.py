"""Django admin for every model, for superusers.

What scheduling reads goes through the services here as everywhere: a workload's
scheduling fields and a node's state are read-only, and changed by admin actions that
call the same services as the API and the console (events, a cycle, access checks).
Other changes to scheduling configuration ask for a cycle when saved; the models raise
versions themselves (models.versioned).
"""

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from scheduler_core import models
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.selectors.simulations import SIMULATION_INPUTS
from scheduler_core.services.cluster import node_cordon, node_drain, node_uncordon
from scheduler_core.services.workloads import workload_cancel, workload_resume, workload_suspend


class RequestsCycle(admin.ModelAdmin):
    """Saving or deleting this model changes what the scheduler decides: ask for a cycle."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        request_cycle()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        super().delete_model(request, obj)
        request_cycle()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        super().delete_queryset(request, queryset)
        request_cycle()


def _service_action(
    service: Callable[..., Model], keyword: str, description: str
) -> Callable[[admin.ModelAdmin, HttpRequest, QuerySet[Any]], None]:
    """An admin action that calls `service(user=..., <keyword>=obj)` for each selected row
    and reports what it refused and why."""

    def action(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Any]):
        done = 0
        for obj in queryset:
            try:
                service(user=request.user, **{keyword: obj})
                done += 1
            except (ValidationError, PermissionDenied) as exc:
                text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
                modeladmin.message_user(request, f"{obj}: {text}", messages.WARNING)
        if done:
            modeladmin.message_user(request, f"{description}: {done} done.", messages.SUCCESS)

    action.short_description = description  # type: ignore[attr-defined]
    action.__name__ = f"{service.__name__}_action"
    return action


class QuotaInline(admin.TabularInline):
    model = models.Quota
    extra = 0
    fk_name = "project"


class DepartmentQuotaInline(admin.TabularInline):
    model = models.Quota
    extra = 0
    fk_name = "department"


class ProjectMembershipInline(admin.TabularInline):
    model = models.ProjectMembership
    extra = 0
    autocomplete_fields = ["user"]


class DepartmentMembershipInline(admin.TabularInline):
    model = models.DepartmentMembership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(models.Department)
class DepartmentAdmin(RequestsCycle):
    list_display = ["name", "rank", "over_quota_weight", "created_at"]
    search_fields = ["name", "description"]
    list_filter = ["rank"]
    inlines = [DepartmentQuotaInline, DepartmentMembershipInline]


@admin.register(models.Project)
class ProjectAdmin(RequestsCycle):
    list_display = ["name", "department", "rank", "over_quota_weight", "created_at"]
    search_fields = ["name", "description", "department__name"]
    list_filter = ["department", "rank"]
    list_select_related = ["department"]
    inlines = [QuotaInline, ProjectMembershipInline]


@admin.register(models.ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]


@admin.register(models.DepartmentMembership)
class DepartmentMembershipAdmin(admin.ModelAdmin):
    list_display = ["department", "user", "role"]
    list_filter = ["role", "department"]
    search_fields = ["user__username", "department__name"]


@admin.register(models.NodePool)
class NodePoolAdmin(RequestsCycle):
    list_display = [
        "name",
        "policy",
        "placement",
        "preemption",
        "consolidation",
        "min_guaranteed_runtime",
        "fairshare_mode",
    ]
    list_filter = ["policy", "placement", "fairshare_mode"]
    search_fields = ["name"]


@admin.register(models.Node)
class NodeAdmin(RequestsCycle):
    list_display = [
        "name",
        "pool",
        "gpu_count",
        "gpu_model",
        "cpu",
        "memory",
        "state",
        "last_heartbeat",
    ]
    list_filter = ["pool", "state", "gpu_model"]
    search_fields = ["name", "gpu_model"]
    list_select_related = ["pool"]
    readonly_fields = [
        "state", "last_heartbeat", "version", "address", "devices", "capabilities",
        "agent_version", "last_epoch",
    ]  # fmt: skip
    actions = [
        _service_action(node_cordon, "node", "Cordon selected nodes"),
        _service_action(node_uncordon, "node", "Uncordon selected nodes"),
        _service_action(node_drain, "node", "Drain selected nodes"),
    ]


@admin.register(models.Quota)
class QuotaAdmin(RequestsCycle):
    list_display = [
        "__str__",
        "pool",
        "department",
        "project",
        "gpus",
        "limit_gpus",
        "cpu",
        "memory",
    ]
    list_filter = ["pool"]
    search_fields = ["department__name", "project__name"]
    list_select_related = ["pool", "department", "project"]


class AllocationInline(admin.TabularInline):
    model = models.Allocation
    extra = 0
    readonly_fields = ["group", "pod_index", "node", "gpu_devices", "gpu_fraction"]


@admin.register(models.Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "project",
        "kind",
        "status",
        "priority",
        "preemptible",
        "pods",
        "gpus",
        "submitted_at",
        "submitted_by",
    ]
    list_filter = ["status", "kind", "preemptible", "project"]
    search_fields = ["name", "project__name", "submitted_by__username"]
    list_select_related = ["project", "submitted_by"]
    date_hierarchy = "submitted_at"
    inlines = [AllocationInline]
    actions = [
        _service_action(workload_cancel, "workload", "Cancel selected workloads"),
        _service_action(workload_suspend, "workload", "Suspend selected workloads"),
        _service_action(workload_resume, "workload", "Resume selected workloads"),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """Workloads are submitted and changed through the services (console, API, CLI,
        the actions above): every field is read-only here."""
        return [f.name for f in self.model._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(models.Allocation)
class AllocationAdmin(admin.ModelAdmin):
    list_display = ["workload", "group", "pod_index", "node", "gpu_devices", "gpu_fraction"]
    list_filter = ["node__pool"]
    search_fields = ["workload__name", "node__name"]
    list_select_related = ["workload", "node"]


@admin.register(models.SchedulingEvent)
class SchedulingEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "type", "workload", "project", "node", "reason"]
    list_filter = ["type", "project", "pool"]
    search_fields = ["reason", "workload__name"]
    list_select_related = ["workload", "project", "node"]
    date_hierarchy = "created_at"


@admin.register(models.UsageSample)
class UsageSampleAdmin(admin.ModelAdmin):
    list_display = [
        "interval_start",
        "interval_end",
        "pool",
        "department",
        "project",
        "gpu_seconds",
    ]
    list_filter = ["pool"]
    search_fields = ["project__name", "department__name"]


@admin.register(models.QueueState)
class QueueStateAdmin(admin.ModelAdmin):
    list_display = [
        "pool",
        "department",
        "project",
        "deserved_gpus",
        "fairshare_gpus",
        "allocated_gpus",
        "requested_gpus",
        "pending_count",
        "running_count",
    ]
    list_filter = ["pool"]
    search_fields = ["project__name", "department__name"]


@admin.register(models.CycleRecord)
class CycleRecordAdmin(admin.ModelAdmin):
    list_display = [
        "started_at",
        "duration_seconds",
        "decisions",
        "dropped_decisions",
        "pending",
        "running",
    ]
    search_fields = ["details"]
    list_filter = ["started_at"]


@admin.register(models.Simulation)
class SimulationAdmin(admin.ModelAdmin):
    list_display = ["name", "source", "status", "progress", "created_by", "created_at"]
    list_filter = ["status", "source"]
    search_fields = ["name"]
    exclude = ["trace_text"]  # megabytes of CSV: the console and the API show the run

    def get_queryset(self, request):
        return super().get_queryset(request).defer("result", *SIMULATION_INPUTS)


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at"]
    search_fields = ["name", "user__username"]
    list_filter = ["created_at"]
    readonly_fields = ["key_hash", "prefix"]


@admin.register(models.IdempotencyKey)
class IdempotencyKeyAdmin(admin.ModelAdmin):
    list_display = ["user", "key", "response_status", "created_at"]
    search_fields = ["key", "user__username"]
    list_filter = ["response_status"]


@admin.register(models.WorkloadCandidatePool)
class WorkloadCandidatePoolAdmin(admin.ModelAdmin):
    list_display = ["workload", "pool", "preference"]
    list_filter = ["pool"]
    search_fields = ["workload__name"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """What agents report: looked at here, never edited (the agents and services write it)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.JoinToken)
class JoinTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "pool", "description", "created_by", "created_at", "revoked_at"]
    list_filter = ["pool"]
    search_fields = ["description", "prefix"]
    readonly_fields = ["key_hash", "prefix", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False  # made by the pool page, the API or `manage.py agent_token` (shown once)


@admin.register(models.NodeCredential)
class NodeCredentialAdmin(admin.ModelAdmin):
    list_display = ["node", "prefix", "created_at", "revoked_at", "last_used_at"]
    search_fields = ["node__name"]
    readonly_fields = ["node", "key_hash", "prefix", "created_at", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False  # made when an agent registers


@admin.register(models.PodRun)
class PodRunAdmin(ReadOnlyAdmin):
    list_display = ["pk", "workload", "node", "group", "pod_index", "epoch", "state",
                    "exit_code", "signal", "started_at", "ended_at"]  # fmt: skip
    list_filter = ["state", "node"]
    search_fields = ["workload__name", "node__name"]
    list_select_related = ["workload", "node"]


@admin.register(models.LogChunk)
class LogChunkAdmin(ReadOnlyAdmin):
    list_display = ["run", "offset"]
    search_fields = ["run__workload__name"]


@admin.register(models.GpuSample)
class GpuSampleAdmin(ReadOnlyAdmin):
    list_display = ["node", "index", "at", "utilization", "memory_used_mib"]
    list_filter = ["node"]
    search_fields = ["node__name"]


@admin.register(models.RunUsageSample)
class RunUsageSampleAdmin(ReadOnlyAdmin):
    list_display = ["run", "at", "cpu_percent", "rss_mib"]
    search_fields = ["run__workload__name"]


@admin.register(models.GpuUsageRollup)
class GpuUsageRollupAdmin(ReadOnlyAdmin):
    list_display = ["start", "resolution", "node", "index", "workload", "held_gpus", "used_gpus"]
    list_filter = ["resolution", "pool"]
    search_fields = ["node__name", "workload__name"]
