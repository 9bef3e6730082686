"""Query filters for the collections (django-filter). Bad values are a 400 naming the
parameter; ids are bounded integers so that no value reaches the database unchecked."""

from __future__ import annotations

import datetime as dt

import django_filters
from django import forms
from django.db.models import Q
from drf_spectacular.utils import extend_schema_field

from api.fields import MAX_INT
from scheduler_core.choices import EventType, NodeState, WorkloadKind, WorkloadStatus
from scheduler_core.models import Node, Quota, SchedulingEvent, Workload


class TextField(forms.CharField):
    """A short query value without control characters (the database would refuse them)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", 200)
        super().__init__(*args, **kwargs)

    def clean(self, value):
        value = super().clean(value)
        if value and any(ord(c) < 32 for c in value):
            raise forms.ValidationError("must not contain control characters")
        return value


class TextFilter(django_filters.CharFilter):
    """A name or search text."""

    field_class = TextField


class UtcDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO 8601 date-time, converted to UTC (any offset the client used is fine)."""

    def clean(self, value):
        value = super().clean(value)
        if value is None:
            return None
        try:
            return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError("date-time out of range") from None


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """Filter on a date-time given in ISO 8601 with any offset."""

    field_class = UtcDateTimeField


class IdFilter(django_filters.NumberFilter):
    """A database id: a whole number from 1."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_INT)
        super().__init__(*args, **kwargs)


def id_filter(field_name: str, description: str) -> IdFilter:
    """An IdFilter documented as a bounded integer with `description`."""
    schema = {"type": "integer", "minimum": 1, "maximum": MAX_INT, "description": description}
    documented = extend_schema_field(schema)(type("IdFilter", (IdFilter,), {}))
    return documented(field_name=field_name)


class WorkloadFilter(django_filters.FilterSet):
    """Filters of GET /workloads/."""

    project = TextFilter(field_name="project__name", help_text="Project name.")
    project_id = id_filter("project_id", "Project id.")
    department = TextFilter(field_name="project__department__name", help_text="Department name.")
    status = django_filters.MultipleChoiceFilter(
        choices=WorkloadStatus.choices, help_text="Status; repeat for several."
    )
    kind = django_filters.ChoiceFilter(choices=WorkloadKind.choices, help_text="Workload kind.")
    submitted_by = TextFilter(
        field_name="submitted_by__username", help_text="Username of the submitter."
    )
    name = TextFilter(field_name="name", lookup_expr="icontains", help_text="Part of the name.")
    pool = TextFilter(method="filter_pool", help_text="Pool name: workloads that may run in it.")
    node = TextFilter(method="filter_node", help_text="Node name: workloads with a pod on it.")
    submitted_after = UtcDateTimeFilter(
        field_name="submitted_at", lookup_expr="gte", help_text="Submitted at or after."
    )
    submitted_before = UtcDateTimeFilter(
        field_name="submitted_at", lookup_expr="lt", help_text="Submitted before."
    )

    class Meta:
        model = Workload
        fields: list[str] = []

    def filter_node(self, queryset, name, value):
        return queryset.filter(allocations__node__name=value).distinct()

    def filter_pool(self, queryset, name, value):
        return queryset.filter(
            Q(pool_choices__pool__name=value) | Q(pool_choices__isnull=True)
        ).distinct()


class NodeFilter(django_filters.FilterSet):
    """Filters of GET /nodes/."""

    pool = TextFilter(field_name="pool__name", help_text="Pool name.")
    state = django_filters.ChoiceFilter(choices=NodeState.choices, help_text="Node state.")

    class Meta:
        model = Node
        fields: list[str] = []


class QuotaFilter(django_filters.FilterSet):
    """Filters of GET /quotas/."""

    pool = TextFilter(field_name="pool__name", help_text="Pool name.")
    department = TextFilter(
        field_name="department__name", help_text="Department name (its own quota)."
    )
    project = TextFilter(field_name="project__name", help_text="Project name.")
    owner_type = django_filters.ChoiceFilter(
        choices=[("department", "department"), ("project", "project")],
        method="filter_owner_type",
        help_text="Only department or only project quotas.",
    )

    class Meta:
        model = Quota
        fields: list[str] = []

    def filter_owner_type(self, queryset, name, value):
        return queryset.filter(project__isnull=value == "department")


class EventFilter(django_filters.FilterSet):
    """Filters of GET /events/."""

    type = django_filters.MultipleChoiceFilter(
        choices=EventType.choices, help_text="Event type; repeat for several."
    )
    project = TextFilter(field_name="project__name", help_text="Project name.")
    project_id = id_filter("project_id", "Project id.")
    workload = id_filter("workload_id", "Workload id.")
    pool = TextFilter(field_name="pool__name", help_text="Pool name.")
    node = TextFilter(field_name="node__name", help_text="Node name.")
    since = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="At or after (ISO 8601)."
    )
    until = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="Before (ISO 8601)."
    )

    class Meta:
        model = SchedulingEvent
        fields: list[str] = []
