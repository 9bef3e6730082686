"""Query filters for the collections (django-filter). Bad values are a 400 naming the
parameter, and so is a parameter given with no value (`?until=`: a client that meant to
filter must not get everything); ids are bounded integers so that no value reaches the
database unchecked."""

from __future__ import annotations

import datetime as dt

import django_filters
from django import forms
from django.db.models import Q
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field

from api.fields import MAX_INT
from scheduler_core.choices import EventType, NodeState, WorkloadKind, WorkloadStatus
from scheduler_core.models import Node, Quota, SchedulingEvent, Workload

EMPTY_VALUE = "must not be empty: give a value or leave the parameter out"


class NoEmptyValuesForm(forms.Form):
    """The form of a FilterSet: a parameter sent empty is an error, not ignored."""

    def clean(self):
        cleaned = super().clean()
        for name in self.fields:
            key = self.add_prefix(name)
            if key in self.data and "" in self.data.getlist(key):  # a QueryDict
                self.add_error(name, EMPTY_VALUE)
        return cleaned


class FilterSet(django_filters.FilterSet):
    """A FilterSet whose parameters may be left out but never sent empty."""

    def get_form_class(self):
        form = super().get_form_class()
        return type(form.__name__, (NoEmptyValuesForm, form), {})


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend, left out for a request that names none of the view's
    filters: building and validating a filter form of empty fields (which then filter
    nothing) cost about a tenth of a list request such as `fairway top`'s. A parameter
    that starts with a filter's name (`since`, `submitted_after` for a range) takes the
    whole path, with its errors."""

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is not None:
            names = tuple(filterset_class.base_filters)
            if not any(key.startswith(names) for key in request.query_params):
                return queryset
        return super().filter_queryset(request, queryset, view)


TEXT_MAX_LENGTH = 200


class TextField(forms.CharField):
    """A short query value without control characters (the database would refuse them)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", TEXT_MAX_LENGTH)
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


# What the schema states of each kind of parameter: the limits the fields above enforce.
TEXT_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": TEXT_MAX_LENGTH,
    "pattern": "^[^\\x00-\\x1f]*$",
}
ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_INT}


def _documented(filter_class: type, schema: dict, **kwargs) -> django_filters.Filter:
    """A `filter_class` filter whose schema is `schema` with its help text."""
    schema = {**schema, "description": kwargs.get("help_text", "")}
    documented = extend_schema_field(schema)(type(filter_class.__name__, (filter_class,), {}))
    return documented(**kwargs)


def text_filter(**kwargs) -> TextFilter:
    """A TextFilter documented with its limits (kwargs as for TextFilter)."""
    return _documented(TextFilter, TEXT_SCHEMA, **kwargs)


def id_filter(field_name: str, description: str) -> IdFilter:
    """An IdFilter documented as a bounded integer with `description`."""
    return _documented(IdFilter, ID_SCHEMA, field_name=field_name, help_text=description)


class WorkloadFilter(FilterSet):
    """Filters of GET /workloads/."""

    project = text_filter(field_name="project__name", help_text="Project name.")
    project_id = id_filter("project_id", "Project id.")
    department = text_filter(field_name="project__department__name", help_text="Department name.")
    status = django_filters.MultipleChoiceFilter(
        choices=WorkloadStatus.choices, help_text="Status; repeat for several."
    )
    kind = django_filters.ChoiceFilter(choices=WorkloadKind.choices, help_text="Workload kind.")
    submitted_by = text_filter(
        field_name="submitted_by__username", help_text="Username of the submitter."
    )
    name = text_filter(field_name="name", lookup_expr="icontains", help_text="Part of the name.")
    pool = text_filter(method="filter_pool", help_text="Pool name: workloads that may run in it.")
    node = text_filter(method="filter_node", help_text="Node name: workloads with a pod on it.")
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


class NodeFilter(FilterSet):
    """Filters of GET /nodes/."""

    pool = text_filter(field_name="pool__name", help_text="Pool name.")
    state = django_filters.ChoiceFilter(choices=NodeState.choices, help_text="Node state.")

    class Meta:
        model = Node
        fields: list[str] = []


class QuotaFilter(FilterSet):
    """Filters of GET /quotas/."""

    pool = text_filter(field_name="pool__name", help_text="Pool name.")
    department = text_filter(
        field_name="department__name", help_text="Department name (its own quota)."
    )
    project = text_filter(field_name="project__name", help_text="Project name.")
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


class EventFilter(FilterSet):
    """Filters of GET /events/."""

    type = django_filters.MultipleChoiceFilter(
        choices=EventType.choices, help_text="Event type; repeat for several."
    )
    project = text_filter(field_name="project__name", help_text="Project name.")
    project_id = id_filter("project_id", "Project id.")
    workload = id_filter("workload_id", "Workload id.")
    pool = text_filter(field_name="pool__name", help_text="Pool name.")
    node = text_filter(field_name="node__name", help_text="Node name.")
    since = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="At or after (ISO 8601)."
    )
    until = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="Before (ISO 8601)."
    )

    class Meta:
        model = SchedulingEvent
        fields: list[str] = []
