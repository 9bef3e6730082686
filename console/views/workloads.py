"""Workloads: one workload's detail with its pods (their output, runs and usage) and
timeline, and the actions its project's members may take (the list is in
workload_list.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.forms import PriorityForm
from console.views.common import page
from console.views.workload_output import output_context, pool_backends
from scheduler_core import access, selectors
from scheduler_core.models import Workload
from scheduler_core.selectors.event_feed import workload_timeline
from scheduler_core.selectors.ports import open_ports, ports_note
from scheduler_core.services import workloads as workload_services


def _visible_workload(request, pk: int) -> Workload:
    qs = selectors.workloads_with_placements(selectors.workload_list(user=request.user))
    return get_object_or_404(qs, pk=pk)


def _backend(workload: Workload, allocations: list) -> str | None:
    """The backend that runs (or would run) the workload: its pools', when they have one."""
    backends = set(pool_backends(allocations).values())
    if not backends:
        backends = {c.pool.backend for c in workload.pool_choices.all()}
    return backends.pop() if len(backends) == 1 else None


def _detail_context(request, workload: Workload, *, with_log: bool = False) -> dict:
    allocations = list(workload.allocations.all())
    return {
        **output_context(request, workload, allocations, with_log=with_log),
        "open_ports": open_ports(workload),
        "ports_note": ports_note(workload, _backend(workload, allocations)),
        "w": workload,
        "allocations": allocations,
        "nodes": sorted({a.node.name for a in allocations}),
        "pools": [c.pool for c in workload.pool_choices.all()],
        "timeline": workload_timeline(workload, user=request.user),
        "can_act": access.can_submit_to(request.user, workload.project),
        "priority_form": PriorityForm(initial={"priority": workload.priority}),
    }


@login_required
def workload_detail(request, pk: int):
    workload = _visible_workload(request, pk)
    context = _detail_context(request, workload, with_log=True)
    return page(request, "console/workloads/detail.html", "workloads", context)


@login_required
def workload_detail_live(request, pk: int):
    workload = _visible_workload(request, pk)
    return render(
        request, "console/workloads/_detail_live.html", _detail_context(request, workload)
    )


@login_required
def workload_output_runs(request, pk: int):
    """The runs of one pod (`?pod=`) and how they ended, for logs.js to swap in."""
    workload = _visible_workload(request, pk)
    return render(
        request, "console/workloads/_output_runs.html", _detail_context(request, workload)
    )


def _act(request, pk: int, action, success: str, **kwargs):
    workload = _visible_workload(request, pk)
    try:
        action(user=request.user, workload=workload, **kwargs)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, success.format(name=workload.name))
    return redirect("console:workload_detail", pk=pk)


@login_required
@require_POST
def workload_cancel(request, pk: int):
    return _act(request, pk, workload_services.workload_cancel, "{name} was cancelled.")


@login_required
@require_POST
def workload_suspend(request, pk: int):
    return _act(request, pk, workload_services.workload_suspend, "{name} is suspended.")


@login_required
@require_POST
def workload_resume(request, pk: int):
    return _act(request, pk, workload_services.workload_resume, "{name} is back in its queue.")


@login_required
@require_POST
def workload_priority(request, pk: int):
    form = PriorityForm(request.POST)
    if not form.is_valid():
        _visible_workload(request, pk)
        messages.error(request, "Priority must be a whole number.")
        return redirect("console:workload_detail", pk=pk)
    return _act(
        request,
        pk,
        workload_services.workload_set_priority,
        "Priority of {name} changed; it is re-ordered at the next cycle.",
        priority=form.cleaned_data["priority"],
    )
