"""Submit: a form for every workload option, the services' errors next to the fields, and
a preview of where the workload would fit right now."""

from __future__ import annotations

import math

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.forms import SubmitForm, attach_service_errors
from console.permissions import role_required
from console.views.common import page
from scheduler_core import access
from scheduler_core.models import NodePool
from scheduler_core.schemas.base import MAX_PODS
from scheduler_core.schemas.errors import SchemaInvalid
from scheduler_core.schemas.workloads import MAX_GROUPS
from scheduler_core.selectors.placement_preview import placement_preview
from scheduler_core.selectors.submittable import submittable_projects
from scheduler_core.services.workloads import workload_submit
from scheduler_core.workload_fit import GroupAsk, PodAsk


def _can_submit_anywhere(user) -> bool:
    return access.is_any_admin(user) or submittable_projects(user=user).exists()


submitter_required = role_required(_can_submit_anywhere, "you are not a researcher of any project")


def _form(request, data=None) -> SubmitForm:
    initial = {}
    project = request.GET.get("project")
    if project:
        initial["project"] = project
    return SubmitForm(
        data,
        projects=submittable_projects(user=request.user),
        pools=NodePool.objects.order_by("name"),
        initial=initial,
    )


def _number(value, default: float) -> float:
    """A number a user typed into a JSON group, or `default` when it is none."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


def _pods(value) -> int:
    """A count of pods a form holds, within what the schema accepts."""
    return min(max(1, int(_number(value, 1))), MAX_PODS)


def _asked_groups(form: SubmitForm) -> list[GroupAsk]:
    """The pod groups the form asks for: as the submission reads them once the form is
    valid, else as far as its fields can be read (the form is still being filled in)."""
    if form.is_bound and form.is_valid():
        try:
            return list(form.to_request().shape().pod_groups())
        except SchemaInvalid:
            pass
    data = form.cleaned_data if form.is_bound and hasattr(form, "cleaned_data") else {}
    groups = data.get("groups_list") or []
    if groups:
        return [
            PodAsk(
                gang=_pods(g.get("min_pods", g.get("pods", 1))),
                gpus=_number(g.get("gpus"), 0.0),
                cpu=_number(g.get("cpu"), 0.0),
                memory=_number(g.get("memory"), 0.0),
            )
            for g in groups[:MAX_GROUPS]
        ]
    asked = data.get("gpus")
    return [
        PodAsk(
            gang=_pods(data.get("min_pods") or data.get("pods") or 1),
            gpus=1.0 if asked is None and not form.is_bound else (asked or 0.0),
            cpu=data.get("cpu") or 0.0,
            memory=data.get("memory") or 0.0,
        )
    ]


def _preview(request, form: SubmitForm) -> dict:
    """Numbers for the preview panel from whatever the form holds now (valid or not)."""
    data = form.cleaned_data if form.is_bound and hasattr(form, "cleaned_data") else {}
    project = data.get("project")
    if project is None and not form.is_bound:
        project_field = form.fields["project"]
        assert isinstance(project_field, forms.ModelChoiceField)
        assert project_field.queryset is not None  # (the projects the user may submit to)
        project = project_field.queryset.first()
    pools = data.get("pools") or list(NodePool.objects.order_by("name"))
    groups = _asked_groups(form)
    fits = placement_preview(user=request.user, project=project, pools=pools, groups=groups)
    return {
        "fits": fits,
        "never_anywhere": bool(fits) and all(f.never for f in fits),
        "preview_project": project,
        "preview_pods": sum(g.gang for g in groups),
        "preview_gpus": groups[0].gpus if len(groups) == 1 else None,
        "preview_groups": len(groups),
    }


@submitter_required
def submit(request):
    if request.method == "POST":
        form = _form(request, request.POST)
        preview = _preview(request, form)  # of the values sent, before any error is attached
        if form.is_valid():
            try:
                workload = workload_submit(user=request.user, request=form.to_request())
            except ValidationError as exc:
                attach_service_errors(form, exc, SubmitForm.aliases)
            except PermissionDenied as exc:
                form.add_error("project", str(exc))
            else:
                messages.success(
                    request,
                    f"{workload.name} was submitted to {workload.project.name}; "
                    "its status below is live.",
                )
                return redirect("console:workload_detail", pk=workload.pk)
    else:
        form = _form(request)
        preview = _preview(request, form)
    return page(request, "console/submit.html", "submit", {"form": form, **preview})


@submitter_required
@require_POST
def submit_preview(request):
    """The preview panel, re-rendered as the form changes (htmx)."""
    form = _form(request, request.POST)
    form.is_valid()
    return render(request, "console/partials/_submit_preview.html", _preview(request, form))
