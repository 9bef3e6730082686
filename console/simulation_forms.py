"""The Simulations page's forms: a run (its name, source and horizon) and its changes, each
chosen in a row of selects and numbers (a quota, a weight, a pool setting, nodes added or
removed) instead of typed as JSON.

The rows become the `changes` dict of `simulation_create` (scheduler_core.whatif.changes);
the service's errors, keyed `changes.quotas[0].gpus`, come back next to the row and field
that produced them. The choices offered are what the user may change for real: department
admins see their departments' projects and only quota and weight rows.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import QueryDict

from console.forms import json_field
from console.kept_uploads import KeptUpload, upload_keep, upload_kept
from scheduler_core import access
from scheduler_core.engine.profiles import PROFILE_KAI, PROFILE_LAB
from scheduler_core.engine.snapshot import FAIRSHARE_MODES, PLACEMENTS, POLICIES
from scheduler_core.models import Department, Node, NodePool, Project
from scheduler_core.whatif.changes import POOL_DEFAULTS
from scheduler_core.whatif.traces import TraceError, parse_team_nodes

QUOTA, WEIGHT, POOL, ADD_NODES, REMOVE_NODE = "quota", "weight", "pool", "add_nodes", "remove_node"
KINDS = {
    QUOTA: "Quota in a pool",
    WEIGHT: "Over-quota weight or rank",
    POOL: "A pool setting",
    ADD_NODES: "Add nodes",
    REMOVE_NODE: "Take a node away",
}
DEPARTMENT_ADMIN_KINDS = (QUOTA, WEIGHT)
CHANGE_KEY = {
    QUOTA: "quotas",
    WEIGHT: "weights",
    POOL: "pools",
    ADD_NODES: "add_nodes",
    REMOVE_NODE: "remove_nodes",
}
ROW_FIELDS = {  # which of a row's fields each kind uses (the page shows only those)
    QUOTA: ("owner", "pool", "gpus", "limit_gpus"),
    WEIGHT: ("owner", "weight", "rank"),
    POOL: ("pool", "setting", "value"),
    ADD_NODES: ("name", "pool", "gpus", "count"),
    REMOVE_NODE: ("node",),
}
SERVICE_FIELD = {  # a service error's last key -> the row field it is about
    "project": "owner",
    "department": "owner",
    "over_quota_weight": "weight",
    "limit_gpus": "limit_gpus",
    "gpus": "gpus",
    "rank": "rank",
    "pool": "pool",
    "name": "name",
    "count": "count",
}
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
MAX_ROWS = 50


def _setting_choices() -> list[tuple[str, Any]]:
    """Pool settings as options: "policy=fairshare" sets a value; a bare key takes `value`."""
    choose = {"policy": POLICIES, "placement": PLACEMENTS, "fairshare_mode": FAIRSHARE_MODES}
    options: list[tuple[str, str]] = []
    numbers: list[tuple[str, str]] = []
    for key, default in POOL_DEFAULTS.items():
        title = key.replace("_", " ")
        if key in choose:
            options += [(f"{key}={v}", f"{title}: {v.replace('_', ' ')}") for v in choose[key]]
        elif isinstance(default, bool):
            options += [(f"{key}=on", f"{title}: on"), (f"{key}=off", f"{title}: off")]
        else:
            numbers.append((key, f"{title} (give the number)"))
    return [("", "—"), ("Set to", options), ("A number", numbers)]


SETTING_CHOICES = _setting_choices()


@dataclass
class ChangeChoices:
    """What a user may pick in a change row: kinds, queue owners, pools, nodes."""

    kinds: list[tuple[str, str]]
    owners: list[tuple[str, Any]]
    pools: list[tuple[str, str]]
    nodes: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def for_user(cls, user) -> ChangeChoices:
        managed = access.managed_department_ids(user)
        projects = Project.objects.visible_to(user).order_by("name")
        if managed is not None:  # a department admin tries only what they could change
            projects = projects.filter(department_id__in=managed)
        owners: list[tuple[str, Any]] = [("", "—")]
        owners.append(
            ("Projects", [(f"project:{n}", n) for n in projects.values_list("name", flat=True)])
        )
        kinds = list(KINDS.items())
        pools = [("", "—")] + [
            (n, n) for n in NodePool.objects.order_by("name").values_list("name", flat=True)
        ]
        nodes: list[tuple[str, str]] = []
        if managed is None:
            departments = Department.objects.order_by("name").values_list("name", flat=True)
            owners.append(("Departments", [(f"department:{n}", n) for n in departments]))
            nodes = [("", "—")] + [
                (n, n)
                for n in Node.objects.visible_to(user)
                .order_by("name")
                .values_list("name", flat=True)
            ]
        else:
            kinds = [(k, label) for k, label in kinds if k in DEPARTMENT_ADMIN_KINDS]
        return cls(
            kinds=[("", "— choose a change —"), *kinds], owners=owners, pools=pools, nodes=nodes
        )


def _number(label: str, *, min_value: float = 0) -> forms.FloatField:
    """An optional decimal number (GPUs, a weight)."""
    return forms.FloatField(
        required=False,
        min_value=min_value,
        label=label,
        widget=forms.NumberInput(attrs={"step": "any", "inputmode": "decimal"}),
    )


def _whole(label: str, *, min_value: int | None = 0) -> forms.IntegerField:
    """An optional whole number (a rank, a count, seconds)."""
    return forms.IntegerField(
        required=False,
        min_value=min_value,
        label=label,
        widget=forms.NumberInput(attrs={"step": "1", "inputmode": "numeric"}),
    )


class ChangeRowForm(forms.Form):
    """One change: its kind, then the selects and numbers that kind needs."""

    kind = forms.ChoiceField(required=False, label="Change")
    owner = forms.ChoiceField(required=False, label="Project or department")
    pool = forms.ChoiceField(required=False, label="Pool")
    node = forms.ChoiceField(required=False, label="Node")
    gpus = _number("GPUs")
    limit_gpus = _number("GPU limit (optional)")
    weight = _number("Over-quota weight")
    rank = _whole("Rank", min_value=None)
    setting = forms.ChoiceField(required=False, label="Setting", choices=SETTING_CHOICES)
    value = _whole("Number (for a number setting)")
    name = forms.CharField(required=False, max_length=63, label="New node name")
    count = _whole("How many nodes", min_value=1)

    def __init__(self, *args: Any, choices: ChangeChoices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = choices.kinds  # type: ignore[attr-defined]
        self.fields["owner"].choices = choices.owners  # type: ignore[attr-defined]
        self.fields["pool"].choices = choices.pools  # type: ignore[attr-defined]
        self.fields["node"].choices = choices.nodes or [("", "—")]  # type: ignore[attr-defined]
        self.change: tuple[str, Any] | None = None
        self.identity: tuple[Any, ...] | None = None

    def row_fields(self) -> list[forms.BoundField]:
        """The fields after `kind`, each marked with the kinds that use it."""
        return [self[name] for name in self.fields if name not in ("kind", "DELETE")]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = data.get("kind") or ""
        if not kind:
            typed = [n for n in ("name",) if data.get(n)] + [
                n
                for n in ("gpus", "limit_gpus", "weight", "rank", "value", "count")
                if data.get(n) is not None
            ]
            if typed:
                self.add_error("kind", "choose what this row changes (or remove the row)")
            return data
        build = getattr(self, f"_clean_{kind}")
        build(data)
        return data

    def _need(self, data: dict[str, Any], name: str, message: str) -> Any:
        value = data.get(name)
        if value in (None, "") and name not in self.errors:
            self.add_error(name, message)
        return value

    def _clean_quota(self, data: dict[str, Any]) -> None:
        owner = self._need(data, "owner", "choose a project or department")
        pool = self._need(data, "pool", "choose a pool")
        gpus, limit = data.get("gpus"), data.get("limit_gpus")
        if gpus is None and limit is None and not {"gpus", "limit_gpus"} & set(self.errors):
            self.add_error("gpus", "give the deserved GPUs, a GPU limit, or both")
        if owner and pool and not self.errors:
            kind, name = owner.split(":", 1)
            item: dict[str, Any] = {kind: name, "pool": pool}
            if gpus is not None:
                item["gpus"] = gpus
            if limit is not None:
                item["limit_gpus"] = limit
            self.change, self.identity = ("quotas", item), ("quota", owner, pool)

    def _clean_weight(self, data: dict[str, Any]) -> None:
        owner = self._need(data, "owner", "choose a project or department")
        weight, rank = data.get("weight"), data.get("rank")
        if weight is None and rank is None and not {"weight", "rank"} & set(self.errors):
            self.add_error("weight", "give an over-quota weight, a rank, or both")
        if owner and not self.errors:
            kind, name = owner.split(":", 1)
            item: dict[str, Any] = {kind: name}
            if weight is not None:
                item["over_quota_weight"] = weight
            if rank is not None:
                item["rank"] = rank
            self.change, self.identity = ("weights", item), ("weight", owner)

    def _clean_pool(self, data: dict[str, Any]) -> None:
        pool = self._need(data, "pool", "choose a pool")
        setting = self._need(data, "setting", "choose a setting")
        if not setting:
            return
        key, _, chosen = setting.partition("=")
        value: Any
        if chosen:
            value = {"on": True, "off": False}.get(chosen, chosen)
        else:
            value = self._need(data, "value", f"give the number for {key.replace('_', ' ')}")
        if pool and value is not None and not self.errors:
            self.change, self.identity = ("pools", {"pool": pool, key: value}), ("pool", pool, key)

    def _clean_add_nodes(self, data: dict[str, Any]) -> None:
        name = (data.get("name") or "").strip()
        if not name:
            self.add_error("name", "name the new node, e.g. new-a100")
        elif not NODE_NAME.match(name):
            self.add_error("name", "lower-case letters, digits and '-', e.g. new-a100")
        pool = self._need(data, "pool", "choose a pool")
        gpus = self._need(data, "gpus", "give the GPUs of each new node")
        if gpus is not None and not float(gpus).is_integer() and "gpus" not in self.errors:
            self.add_error("gpus", "a node has a whole number of GPUs")
        if name and pool and gpus is not None and not self.errors:
            item: dict[str, Any] = {"name": name, "pool": pool, "gpus": int(gpus)}
            if data.get("count"):
                item["count"] = data["count"]
            self.change, self.identity = ("add_nodes", item), ("add", name)

    def _clean_remove_node(self, data: dict[str, Any]) -> None:
        node = self._need(data, "node", "choose the node to take away")
        if node and not self.errors:
            self.change, self.identity = ("remove_nodes", node), ("remove", node)


DUPLICATE = {
    "quota": ("owner", "this quota is changed in row {row} already"),
    "weight": ("owner", "this weight is changed in row {row} already"),
    "pool": ("setting", "this pool setting is changed in row {row} already"),
    "add": ("name", "a node of this name is added in row {row} already"),
    "remove": ("node", "this node is taken away in row {row} already"),
}


def _removed(form: forms.Form) -> bool:
    """Ticked "Remove this change" (or removed by the page's script)."""
    return bool(getattr(form, "cleaned_data", {}).get("DELETE"))


class BaseChangeRows(forms.BaseFormSet):
    """The change rows: each change once; `changes()` is the dict the service takes."""

    def clean(self) -> None:
        seen: dict[tuple[Any, ...], int] = {}
        for number, form in enumerate(self.forms, start=1):
            if _removed(form) or form.identity is None:
                continue
            if form.identity in seen:
                name, message = DUPLICATE[form.identity[0]]
                form.add_error(name, message.format(row=seen[form.identity]))
            else:
                seen[form.identity] = number

    def live_forms(self) -> list[ChangeRowForm]:
        return [f for f in self.forms if not _removed(f)]

    def changes(self) -> tuple[dict[str, Any], dict[tuple[str, int], ChangeRowForm]]:
        """The `changes` dict, and which row each `changes.<key>[<i>]` came from."""
        changes: dict[str, list[Any]] = {}
        rows: dict[tuple[str, int], ChangeRowForm] = {}
        for form in self.live_forms():
            if form.change is None:
                continue
            key, item = form.change
            rows[(key, len(changes.setdefault(key, [])))] = form
            changes[key].append(item)
        return changes, rows


ChangeRows = forms.formset_factory(
    ChangeRowForm,
    formset=BaseChangeRows,
    extra=0,
    can_delete=True,
    max_num=MAX_ROWS,
    validate_max=True,
)
ROWS_PREFIX = "changes"
SERVICE_KEY = re.compile(r"^changes\.(\w+)\[(\d+)\](?:\.(\w+))?$")


def change_rows(user, data=None, *, add_row: bool = False) -> BaseChangeRows:
    """The change rows of `user`'s form: one empty row on a new form; one more on "Add a
    change" without JavaScript."""
    kwargs: dict[str, Any] = {
        "prefix": ROWS_PREFIX,
        "form_kwargs": {"choices": ChangeChoices.for_user(user)},
    }
    if data is None or f"{ROWS_PREFIX}-TOTAL_FORMS" not in data:
        return ChangeRows(initial=[{}], **kwargs)  # type: ignore[return-value]
    if add_row:
        data = data.copy()
        total = f"{ROWS_PREFIX}-TOTAL_FORMS"
        data[total] = str(min(int(data.get(total) or 0) + 1, MAX_ROWS))
    return ChangeRows(data, **kwargs)  # type: ignore[return-value]


def attach_change_errors(
    row_of: dict[tuple[str, int], ChangeRowForm],
    error: ValidationError,
) -> list[tuple[str, list[str]]]:
    """Put the service's `changes.<key>[<i>].<field>` errors beside the row they are about;
    returns the errors that belong to no row (shown with the run's fields)."""
    rest: list[tuple[str, list[str]]] = []
    for key, messages in error.message_dict.items():
        match = SERVICE_KEY.match(key)
        row = row_of.get((match.group(1), int(match.group(2)))) if match else None
        if row is None:
            rest.append((key, messages))
            continue
        name = SERVICE_FIELD.get(match.group(3) or "") if match else None
        if match and match.group(1) == "remove_nodes":
            name = "node"
        for message in messages:
            row.add_error(name if name in row.fields else None, message)
    return rest


TRACE_SETTINGS = (
    ("consolidation_weighs_lost_work", "Moves weigh the work they throw away"),
    ("reclaim_weighs_lost_work", "Reclaims weigh the work they throw away"),
    ("over_quota_weight_from_quota", "Over-quota shared by quota, not by weight"),
    ("reserve_for_gangs", "Hold draining nodes for a waiting gang"),
    ("consolidation_within_quota", "Move pods for work beyond quota only if borrowed and cheap"),
)
"""The pool settings a trace run offers as ticks, on top of its profile (with the kai
profile and none ticked: KAI's behaviour)."""

TRACE_FIELDS = {  # a trace run's option (as the service names it) -> the form's field
    "trace_text": "trace_file",
    "trace.start": "trace_start",
    "trace.hours": "trace_hours",
    "trace.nodes": "trace_nodes",
    "trace.load": "trace_load",
    "trace.gpus_per_node": "trace_gpus_per_node",
    "trace.team_nodes": "team_nodes_file",
    "trace.config": "trace_config",
}


class SimulationForm(forms.Form):
    """A what-if run: an uploaded scenario, the live cluster with changes (the changes
    are chosen in ChangeRows; the JSON box is an advanced fallback), or a job trace
    replayed through the engine, FIFO and FIFO with backfill."""

    name = forms.CharField(max_length=120)
    source = forms.ChoiceField(
        choices=[
            ("live", "Copy of the live cluster, with changes"),
            ("scenario", "A scenario file (YAML or JSON)"),
            ("trace", "A job trace (CSV), against FIFO and backfill"),
        ],
        initial="live",
        widget=forms.RadioSelect,
    )
    scenario_file = forms.FileField(required=False, label="Scenario file")
    scenario_text = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="…or paste the scenario"
    )
    changes = forms.CharField(
        required=False,
        label="Changes as JSON",
        widget=forms.Textarea(
            attrs={
                "rows": 5,
                "placeholder": '{"quotas": [{"project": "vision", "pool": "a100", "gpus": 4}]}',
            }
        ),
        help_text="Instead of the rows above: quotas, weights, pools, add_nodes, remove_nodes.",
    )
    horizon = forms.IntegerField(min_value=60, initial=3600, help_text="Simulated seconds.")
    trace_file = forms.FileField(
        required=False,
        label="Trace file (CSV)",
        help_text="Columns timestamp (UTC), duration (seconds), num_gpus and cluster (the "
        "team), as the Philly trace's; others are ignored.",
    )
    trace_start = forms.CharField(
        required=False,
        label="Window start (UTC)",
        widget=forms.TextInput(attrs={"placeholder": "2017-10-25T19:00"}),
    )
    trace_hours = forms.FloatField(
        required=False, initial=24, label="Window (hours)", help_text="The jobs submitted in it."
    )
    trace_nodes = forms.IntegerField(required=False, initial=48, label="Nodes")
    trace_load = forms.FloatField(
        required=False,
        label="…or offered load",
        help_text="Instead of nodes: the cluster on which the jobs offer this load (1.23).",
    )
    trace_gpus_per_node = forms.IntegerField(required=False, initial=8, label="GPUs per node")
    team_nodes_file = forms.FileField(
        required=False,
        label="Team sizes (CSV, optional)",
        help_text="Columns vc,node num: each team deserves GPUs in proportion (else equal).",
    )
    trace_profile = forms.ChoiceField(
        choices=[
            (PROFILE_LAB, "lab: Fairway's settings for labs (a new pool's)"),
            (PROFILE_KAI, "kai: exactly KAI-Scheduler's settings"),
        ],
        initial=PROFILE_LAB,
        required=False,
        label="Policy profile",
        help_text="Run the trace once with each and compare the two runs.",
    )
    trace_settings = forms.MultipleChoiceField(
        required=False,
        choices=TRACE_SETTINGS,
        widget=forms.CheckboxSelectMultiple,
        label="Pool settings on top of the profile",
        help_text="The lab profile has them all on; with kai and none ticked: KAI-Scheduler.",
    )
    trace_config = forms.CharField(
        required=False,
        label="More pool settings as JSON",
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": '{"max_preemptions_per_workload": 2}'}
        ),
    )

    trace_kept = forms.CharField(required=False, widget=forms.HiddenInput)
    team_nodes_kept = forms.CharField(required=False, widget=forms.HiddenInput)

    MAX_UPLOAD = 2 * 1024 * 1024
    MAX_TRACE_UPLOAD = 8 * 1000 * 1000
    KEPT_FIELDS = {"trace_file": "trace_kept", "team_nodes_file": "team_nodes_kept"}
    """File fields whose upload is kept for the next try when the form has errors, and the
    hidden field that carries its token (console.kept_uploads)."""

    def __init__(self, *args: Any, owner: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.kept: dict[str, KeptUpload] = {}
        """The uploads kept for the next try, by file field (shown beside it)."""

    def _upload_text(self, data: dict[str, Any], field: str, what: str, limit: int) -> str | None:
        """The text of the file uploaded in `field` now, else of the one kept from the
        last try; either is kept for the next try."""
        upload = data.get(field)
        if upload is not None:
            text = self._text(upload, field, what, limit)
            if text is None:
                return None
            kept: KeptUpload | None = upload_keep(owner=self.owner, name=upload.name, text=text)
        else:
            kept = upload_kept(owner=self.owner, token=data.get(self.KEPT_FIELDS[field]))
        if kept is None:
            return None
        self.kept[field] = kept
        if isinstance(self.data, QueryDict):  # the hidden field sends the token back next try
            sent = self.data.copy()
            sent[self.add_prefix(self.KEPT_FIELDS[field])] = kept.token
            self.data = sent
        return kept.text

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        scenario = self._text(data.get("scenario_file"), "scenario_file", "file", self.MAX_UPLOAD)
        if scenario is not None:
            data["scenario_text"] = scenario
        if data.get("source") == "scenario" and not (data.get("scenario_text") or "").strip():
            self.add_error("scenario_text", "upload a scenario file or paste one")
        if data.get("source") == "trace":
            self._clean_trace(data)
        data["changes_dict"] = json_field(
            self,
            "changes",
            lambda v: isinstance(v, dict),
            'write a JSON object, e.g. {"quotas": [...]}',
        )
        return data

    def _clean_trace(self, data: dict[str, Any]) -> None:
        """The trace's text and its options (`trace_options`), as the service takes them."""
        limit = self.MAX_TRACE_UPLOAD
        trace = self._upload_text(data, "trace_file", "trace", limit)
        data["trace_text"] = trace or ""
        if trace is None and "trace_file" not in self.errors:
            self.add_error("trace_file", "upload the trace (CSV)")
        team_nodes = None
        text = self._upload_text(data, "team_nodes_file", "team sizes", limit)
        if text:
            try:
                team_nodes = parse_team_nodes(io.StringIO(text, newline=""))
            except TraceError as exc:
                self.add_error("team_nodes_file", str(exc))
        config: dict[str, Any] = {"profile": data.get("trace_profile") or PROFILE_LAB}
        config.update({key: True for key in data.get("trace_settings") or []})
        more = json_field(
            self,
            "trace_config",
            lambda v: isinstance(v, dict),
            'write a JSON object, e.g. {"max_preemptions_per_workload": 2}',
        )
        config.update(more or {})
        nodes, load = data.get("trace_nodes"), data.get("trace_load")
        data["trace_options"] = {
            "start": data.get("trace_start") or "",
            "hours": data.get("trace_hours"),
            "nodes": None if load is not None else nodes,
            "load": load,
            "gpus_per_node": data.get("trace_gpus_per_node"),
            "team_nodes": team_nodes,
            "config": config,
        }

    def _text(self, upload: Any, field: str, what: str, limit: int) -> str | None:
        """An uploaded file's UTF-8 text; None when there is none, or (with an error on
        `field`) when it is larger than `limit` bytes or not UTF-8."""
        if upload is None:
            return None
        if upload.size > limit:
            self.add_error(field, f"the {what} is larger than {limit // 1_000_000} MB")
            return None
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            self.add_error(field, f"the {what} is not UTF-8 text")
            return None
