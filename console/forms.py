"""Console forms: they translate what a browser sends into service arguments, and put the
services' ValidationErrors back next to the fields they name."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from console import backend_fields
from scheduler_core.choices import EventType, WorkloadKind, WorkloadStatus
from scheduler_core.engine.profiles import PROFILE_KAI, PROFILE_LAB, profile_settings
from scheduler_core.engine.transitions import DEFAULT_FAILED_RUN_RESTARTS
from scheduler_core.models import Department, NodePool, Project
from scheduler_core.models.cluster import PROFILE_CUSTOM
from scheduler_core.models.queue_owner import QueueOwner
from scheduler_core.services.workloads import WorkloadRequest

MAX_POOL_CHOICES = 3


def _offer_projects(form: forms.Form, projects: QuerySet[Project]) -> None:
    """Let the form's `project` field offer only `projects` (those its user may see)."""
    cast(forms.ModelChoiceField, form.fields["project"]).queryset = projects


def attach_service_errors(
    form: forms.Form, error: ValidationError, aliases: dict[str, str] | None = None
) -> None:
    """Show a service's {field: [messages]} next to the form's fields (others on top)."""
    aliases = aliases or {}
    if not hasattr(error, "error_dict"):
        for message in error.messages:
            form.add_error(None, message)
        return
    for key, messages in error.message_dict.items():
        field, where = _field_of(form, key, aliases)
        for message in messages:
            if field in form.fields:
                form.add_error(field, f"{where}: {message}" if where else message)
            else:
                form.add_error(None, f"{key}: {message}")


def _field_of(form: forms.Form, key: str, aliases: dict[str, str]) -> tuple[str | None, str]:
    """The form field an error's key names, and where inside it: a nested key
    ("changes.quotas[0].gpus", "spec.ports[1].name") goes to the field of its longest
    alias or its first word."""
    field = aliases.get(key, key)
    if field in form.fields:
        return field, ""
    for alias in sorted(aliases, key=len, reverse=True):
        if key.startswith(alias) and key[len(alias) : len(alias) + 1] in (".", "["):
            return aliases[alias], key[len(alias) :].lstrip(".")
    match = re.match(r"^(\w+)[.\[]?(.*)$", key)
    if match is None:
        return None, ""
    return aliases.get(match.group(1), match.group(1)), key[len(match.group(1)) :].lstrip(".")


def json_field(
    form: forms.Form, field: str, valid: Callable[[Any], bool], wrong: str
) -> Any | None:
    """The JSON typed into `field` of a cleaned form, or None when it is empty or bad (the
    error, or `wrong` when `valid` turns the value down, is shown beside the field)."""
    text = (form.cleaned_data.get(field) or "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        form.add_error(field, f"not valid JSON: {exc.msg} (line {exc.lineno})")
        return None
    if not valid(value):
        form.add_error(field, wrong)
        return None
    return value


def parse_pairs(text: str, *, field: str) -> dict[str, str]:
    """`key=value` lines (or comma separated) into a dict."""
    pairs: dict[str, str] = {}
    for raw in re.split(r"[\n,]", text or ""):
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError({field: f"write key=value, got {item!r}"})
        pairs[key.strip()] = value.strip()
    return pairs


class SubmitForm(forms.Form):
    """Every workload option a researcher can set."""

    project = forms.ModelChoiceField(queryset=Project.objects.none(), empty_label=None)
    name = forms.CharField(
        max_length=100, help_text="Lowercase letters, digits and dashes; unique in the project."
    )
    kind = forms.ChoiceField(choices=WorkloadKind.choices, initial=WorkloadKind.TRAINING)
    priority = forms.IntegerField(
        required=False,
        help_text="Blank: the kind's default (training 50, interactive 100, inference 125).",
    )
    preemptible = forms.ChoiceField(
        required=False,
        choices=[("", "Default for the kind"), ("yes", "Preemptible"), ("no", "Not preemptible")],
    )
    pods = forms.IntegerField(min_value=1, initial=1)
    min_pods = forms.IntegerField(
        required=False, min_value=1, help_text="Blank: all pods start together (a strict gang)."
    )
    gpus = forms.FloatField(
        label="GPUs",
        min_value=0,
        initial=1,
        help_text="Per pod. 0.5 shares a device; 2 takes two devices.",
    )
    cpu = forms.FloatField(label="CPU", min_value=0, initial=0, help_text="Cores per pod.")
    memory = forms.FloatField(label="Memory", min_value=0, initial=0, help_text="GiB per pod.")
    node_selector = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "gpu=a100"}),
        help_text="Only nodes with these labels; one key=value per line.",
    )
    duration = forms.FloatField(
        required=False, min_value=0, help_text="Seconds of run time (simulated clusters)."
    )
    image = forms.CharField(required=False, max_length=255)
    command = forms.CharField(required=False, max_length=1000)
    env = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "EPOCHS=10"}),
        help_text="Environment, one KEY=value per line.",
    )
    ports = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "lab, tb"}),
        help_text="Names of the ports each pod serves over HTTP (its number in "
        "$FAIRWAY_PORT_<NAME>); opened from the workload's page.",
    )
    weight = forms.FloatField(initial=1.0, help_text="Demand weight under the fairshare policy.")
    backoff_limit = forms.IntegerField(
        required=False,
        min_value=0,
        help_text="Restarts allowed after node faults or failed runs (empty: faults always, "
        f"failed runs {DEFAULT_FAILED_RUN_RESTARTS}).",
    )
    checkpoint_every = forms.FloatField(
        required=False, min_value=0, help_text="Seconds between checkpoints (kept on preemption)."
    )
    groups = forms.CharField(
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "placeholder": '[{"name": "worker", "pods": 4, "min_pods": 2, "gpus": 1}]',
            }
        ),
        help_text="Optional multi-group gang as JSON; replaces pods/min_pods/gpus/cpu/memory.",
    )

    aliases = {
        "spec.duration": "duration", "pools": "pool_1", "spec": "image", "spec.ports": "ports",
    }  # fmt: skip

    def __init__(
        self,
        *args: Any,
        projects: QuerySet[Project] | None = None,
        pools: QuerySet[NodePool] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        _offer_projects(self, projects if projects is not None else Project.objects.all())
        pool_qs = pools if pools is not None else NodePool.objects.order_by("name")
        self.pool_field_names = []
        for i in range(1, min(MAX_POOL_CHOICES, max(pool_qs.count(), 1)) + 1):
            name = f"pool_{i}"
            self.fields[name] = forms.ModelChoiceField(
                queryset=pool_qs,
                required=False,
                empty_label="Any pool" if i == 1 else "—",
                label=["First choice", "Second choice", "Third choice"][i - 1],
            )
            self.pool_field_names.append(name)

    @property
    def pool_fields(self):
        return [self[name] for name in self.pool_field_names]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        try:
            data["node_selector_dict"] = parse_pairs(
                data.get("node_selector", ""), field="node_selector"
            )
            data["env_dict"] = parse_pairs(data.get("env", ""), field="env")
        except ValidationError as exc:
            attach_service_errors(self, exc)
        groups = json_field(
            self,
            "groups",
            lambda v: isinstance(v, list) and all(isinstance(g, dict) for g in v),
            "write a list of objects, one per pod group",
        )
        data["groups_list"] = groups or []
        pools, seen = [], set()
        for name in self.pool_field_names:
            pool = data.get(name)
            if pool is None:
                continue
            if pool.pk in seen:
                self.add_error(name, f"{pool.name} is already a choice above")
            seen.add(pool.pk)
            pools.append(pool)
        data["pools"] = pools
        return data

    def to_request(self) -> WorkloadRequest:
        data = self.cleaned_data
        preemptible = {"yes": True, "no": False}.get(data.get("preemptible") or "")
        spec: dict[str, Any] = {}
        for key in ("image", "command"):
            if data.get(key):
                spec[key] = data[key]
        if data.get("env_dict"):
            spec["env"] = data["env_dict"]
        names = re.split(r"[\s,]+", (data.get("ports") or "").strip())
        if any(names):
            spec["ports"] = [{"name": name, "protocol": "http"} for name in names if name]
        if data.get("duration") is not None:
            spec["duration"] = data["duration"]
        if data.get("checkpoint_every") is not None:
            spec["checkpoint_every"] = data["checkpoint_every"]
        return WorkloadRequest(
            project=data["project"],
            name=data["name"].strip(),
            kind=data["kind"],
            priority=data.get("priority"),
            preemptible=preemptible,
            pods=data["pods"],
            min_pods=data.get("min_pods"),
            gpus=data["gpus"],
            cpu=data["cpu"],
            memory=data["memory"],
            groups=data.get("groups_list") or [],
            pools=data["pools"],
            node_selector=data.get("node_selector_dict") or {},
            weight=data["weight"] if data.get("weight") is not None else 1.0,
            backoff_limit=data.get("backoff_limit"),
            spec=spec,
        )


class QuotaRowForm(forms.Form):
    """One department's or project's quota in one pool. (Its rank and over-quota weight
    are not per pool: they are edited on its own page, QueueOwnerSettingsForm.)"""

    gpus = forms.FloatField(label="Deserved GPUs")
    limit_gpus = forms.FloatField(required=False, label="Limit (blank: none)")


class PriorityForm(forms.Form):
    priority = forms.IntegerField()


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. 'laptop' or 'ci'.")


class WorkloadFilterForm(forms.Form):
    """Filters and order of the workloads list (all optional, from the query string). No
    status means active ones only (pending, starting, running); "all" means every status;
    `sort` is a key of SORTS, "-" first for descending."""

    SORTS = {
        "name": "name",
        "project": "project__name",
        "status": "status",
        "gpus": "gpu_total",
        "submitted": "submitted_at",
        "runtime": "run_time",
        "preemptions": "preemptions",
    }

    q = forms.CharField(required=False, max_length=100, label="Search by name")
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), required=False, empty_label="All projects"
    )
    pool = forms.ModelChoiceField(
        queryset=NodePool.objects.order_by("name"), required=False, empty_label="All pools"
    )
    status = forms.ChoiceField(
        required=False,
        choices=[("active", "Active only"), ("all", "All statuses"), *WorkloadStatus.choices],
    )
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *WorkloadKind.choices])
    user = forms.CharField(required=False, max_length=150, label="Submitted by")
    sort = forms.ChoiceField(
        required=False,
        choices=[("", "Newest first")]
        + [(f"{sign}{key}", f"{key} {sign}") for key in SORTS for sign in ("", "-")],
    )

    def __init__(
        self, *args: Any, projects: QuerySet[Project] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        if projects is not None:
            _offer_projects(self, projects)


class BulkActionForm(forms.Form):
    """Cancel, or set the priority of, the workloads ticked in the list."""

    action = forms.ChoiceField(choices=[("cancel", "Cancel"), ("priority", "Set priority")])
    ids = forms.TypedMultipleChoiceField(coerce=int, choices=[], required=True)
    priority = forms.IntegerField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # any id is accepted here; the view looks them up among those the user may see
        values = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        cast(forms.TypedMultipleChoiceField, self.fields["ids"]).choices = [(v, v) for v in values]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "priority" and data.get("priority") is None:
            self.add_error("priority", "Give the new priority as a whole number.")
        return data


class EventFilterForm(forms.Form):
    """Filters of the events page: type, project, pool, words in the reason or the
    workload's name, a time range, and `before` (the id of the last event of the previous
    page: the cursor to older events)."""

    type = forms.ChoiceField(required=False, choices=[("", "Every type"), *EventType.choices])
    q = forms.CharField(required=False, max_length=100, label="Search")
    start = forms.DateTimeField(
        required=False,
        label="From",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    end = forms.DateTimeField(
        required=False,
        label="To",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    before = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), required=False, empty_label="All projects"
    )
    pool = forms.ModelChoiceField(
        queryset=NodePool.objects.order_by("name"), required=False, empty_label="All pools"
    )

    def __init__(
        self, *args: Any, projects: QuerySet[Project] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        if projects is not None:
            _offer_projects(self, projects)


class QueueOwnerSettingsForm(forms.Form):
    """A department's or project's description, and (for whoever manages the level above
    it) its rank and over-quota weight among its peers."""

    description = forms.CharField(required=False, max_length=255)
    rank = forms.IntegerField(
        initial=0, help_text="Higher rank is served over-quota GPUs first among its peers."
    )
    over_quota_weight = forms.FloatField(
        initial=1.0,
        label="Over-quota weight",
        help_text="Share of over-quota GPUs among peers of the same rank.",
    )

    STANDING = ("rank", "over_quota_weight")

    def __init__(self, *args: Any, standing: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not standing:
            for name in self.STANDING:
                del self.fields[name]


class QueueOwnerCreateForm(QueueOwnerSettingsForm):
    """A new department (system admins) or, with `departments`, a new project in one of them."""

    name = forms.CharField(
        max_length=63, help_text="Lowercase letters, digits and dashes; used in URLs."
    )
    department = forms.ModelChoiceField(queryset=Department.objects.none(), empty_label=None)

    field_order = ["department", "name", "description", "rank", "over_quota_weight"]

    def __init__(self, *args: Any, departments=None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        department = self.fields["department"]
        if departments is None:
            del self.fields["department"]
        else:
            assert isinstance(department, forms.ModelChoiceField)
            department.queryset = departments


class MemberForm(forms.Form):
    """Give a user a role in a department or project (or change their role)."""

    username = forms.CharField(max_length=150)
    role = forms.ChoiceField()

    role_help = {
        "project": "Researchers submit and act on the project's workloads; viewers only read.",
        "department": "Department admins manage its projects, their members and quotas; "
        "viewers only read.",
    }

    def __init__(self, *args: Any, owner: QueueOwner, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        role = self.fields["role"]
        assert isinstance(role, forms.ChoiceField)
        role.choices = owner.member_roles.choices
        role.help_text = self.role_help[owner.kind]


EXECUTION = "Execution"
# A pool's settings, grouped as the settings form shows them.
POOL_SETTING_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Policy", ("description", "profile", "policy", "placement")),
    (EXECUTION, ("backend", "grace_period")),
    (
        "Preemption",
        (
            "preemption",
            "min_guaranteed_runtime",
            "max_preemptions_per_workload",
            "preemption_loop_evictions",
            "reclaim_weighs_lost_work",
            "reclaim_lost_work_ratio",
        ),
    ),
    (
        "Consolidation",
        (
            "consolidation",
            "max_consolidation_evaluations",
            "consolidation_weighs_lost_work",
            "consolidation_within_quota",
            "reserve_for_gangs",
        ),
    ),
    ("Pacing", ("max_reclaims_per_cycle", "max_preemptions_per_cycle")),
    (
        "Fair share",
        (
            "over_quota_weight_from_quota",
            "fairshare_mode",
            "time_based_window",
            "time_based_half_life",
            "time_based_k",
        ),
    ),
)
POOL_SETTINGS = tuple(name for _, names in POOL_SETTING_GROUPS for name in names)
POOL_MODEL_SETTINGS = tuple(name for name in POOL_SETTINGS if name != "profile")
PROFILE_CHOICES = (
    (PROFILE_LAB, "lab: Fairway's settings for labs (less work thrown away)"),
    (PROFILE_KAI, "kai: exactly KAI-Scheduler's settings"),
    (PROFILE_CUSTOM, "custom: the settings below, one by one"),
)


class PoolSettingsForm(forms.Form):
    """A pool's policy and scheduling settings. The fields and defaults are the model's; the
    values are checked by the pools' schema in the services."""

    labels = {
        "preemption": "Preemption: evict workloads to serve others",
        "min_guaranteed_runtime": "Min guaranteed runtime (s)",
        "max_preemptions_per_workload": "Preemptions per workload",
        "preemption_loop_evictions": "Hold a preemption loop after",
        "reclaim_lost_work_ratio": "Share of the wait a reclaim may throw away",
        "consolidation": "Consolidation: move running pods to make room for a gang",
        "max_consolidation_evaluations": "Moves evaluated per cycle",
        "consolidation_weighs_lost_work": "Weigh the work a move throws away against the wait",
        "consolidation_within_quota": "Move pods for work beyond quota only if borrowed and cheap",
        "reclaim_weighs_lost_work": "Weigh the work a reclaim throws away against the wait",
        "reserve_for_gangs": "Hold draining nodes for a gang that does not fit",
        "max_reclaims_per_cycle": "Reclaims per cycle",
        "max_preemptions_per_cycle": "Priority preemptions per cycle",
        "over_quota_weight_from_quota": "Over-quota weight from the quota",
        "fairshare_mode": "Fair share over time",
        "time_based_window": "Usage window (s)",
        "time_based_half_life": "Usage half-life (s)",
        "time_based_k": "Usage penalty (k)",
        "backend": "Runs pods with",
        "grace_period": "Grace period (s)",
    }
    help_texts = {
        "max_reclaims_per_cycle": "Blank: no bound. The next cycle goes on.",
        "max_preemptions_per_cycle": "Blank: no bound.",
        "max_preemptions_per_workload": "After this many, a workload runs to its end. "
        "Blank: no bound.",
        "preemption_loop_evictions": "Evictions in a row, each within an hour of its start; "
        "then it waits an hour. Blank: never held.",
        "fairshare_mode": "Time based: over-quota shares shrink with recent usage.",
        "time_based_k": "How strongly past usage counts (0: not at all).",
    }

    profile = forms.ChoiceField(
        label="Policy profile",
        choices=PROFILE_CHOICES,
        initial=PROFILE_LAB,
        required=False,
        help_text="lab and kai set the settings they name (shown on the pool page), whatever "
        "those fields below say; custom keeps the fields below as you set them.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(
            forms.fields_for_model(
                NodePool,
                fields=POOL_MODEL_SETTINGS,
                labels=self.labels,
                help_texts=self.help_texts,
            )
        )
        self.fields.update(backend_fields.fields())

    @classmethod
    def profile_changes(cls, pool: NodePool) -> list[tuple[str, Any, Any]]:
        """What `pool`'s settings change from KAI's, as (label, KAI's, the pool's)."""
        return [
            (cls.labels.get(name, name), kai, own)
            for name, (kai, own) in pool.profile_changes().items()
        ]

    @classmethod
    def initial_of(cls, pool: NodePool) -> dict[str, Any]:
        """The form's values for `pool` as it is."""
        return {
            **{name: getattr(pool, name) for name in POOL_SETTINGS},
            **backend_fields.initial(pool),
        }

    @property
    def error_aliases(self) -> dict[str, str]:
        return backend_fields.error_aliases(getattr(self, "cleaned_data", {}).get("backend"))

    def clean(self) -> dict[str, Any]:
        """A named profile's settings win over the fields it names; custom names none. The
        backend's own settings become `backend_settings` (console.backend_fields)."""
        data = super().clean() or {}
        backend_fields.take(self, data)
        profile = data.pop("profile", None) or PROFILE_CUSTOM
        if profile != PROFILE_CUSTOM:
            for name in profile_settings(profile):
                data.pop(name, None)
            data["profile"] = profile
        return data

    def groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        """(legend, fields) in the order the form shows them."""
        shown: list[tuple[str, tuple[str, ...]]] = []
        for legend, names in POOL_SETTING_GROUPS:
            shown.append((legend, names))
            if legend == EXECUTION:  # each backend's own settings right below
                shown.extend(backend_fields.groups())
        return [(legend, [self[name] for name in names]) for legend, names in shown]


class PoolCreateForm(PoolSettingsForm):
    name = forms.CharField(
        max_length=63, help_text="Lowercase letters, digits and dashes; used in URLs."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, value in profile_settings(PROFILE_LAB).items():  # a new pool's profile
            self.fields[name].initial = value

    def groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        (legend, fields), *others = super().groups()
        return [(legend, [self["name"], *fields]), *others]


class JoinTokenForm(forms.Form):
    """A join token for a pool's node agents."""

    description = forms.CharField(max_length=255, required=False, help_text="What it is for.")
    expires_in = forms.IntegerField(
        label="Expires in (s)", min_value=60, max_value=366 * 86400, required=False,
        help_text="Blank: a day (JOIN_TOKEN_TTL).",
    )  # fmt: skip
    single_use = forms.BooleanField(
        required=False, help_text="Used up by the first node it registers."
    )


class NodeCreateForm(forms.Form):
    """A node to add to a pool."""

    name = forms.CharField(max_length=63, help_text="Lowercase letters, digits and dashes.")
    gpu_count = forms.IntegerField(label="GPUs", min_value=0, initial=8)
    gpu_model = forms.CharField(label="GPU model", max_length=64, required=False)
    cpu = forms.FloatField(label="CPU cores", min_value=0, initial=0)
    memory = forms.FloatField(label="Memory (GiB)", min_value=0, initial=0)
    labels = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "gpu=a100"}),
        help_text="One key=value per line; workloads select nodes by them.",
    )

    def clean_labels(self) -> dict[str, str]:
        try:
            return parse_pairs(self.cleaned_data.get("labels", ""), field="labels")
        except ValidationError as exc:
            raise ValidationError(exc.messages) from None


def through_service(form: forms.Form, service: Callable[..., Any], **arguments: Any) -> Any:
    """`service(**arguments, **form.cleaned_data)` once `form` is valid: what the service
    returns, or None with the form's or the service's errors next to the fields."""
    if not form.is_valid():
        return None
    try:
        return service(**arguments, **form.cleaned_data)
    except ValidationError as exc:
        attach_service_errors(form, exc, getattr(form, "error_aliases", None))
        return None
