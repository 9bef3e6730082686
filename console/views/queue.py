"""Queue: per pool, the pending workloads in the order the scheduler considers them, with
their position in the pool, the jobs ahead, an estimated start where it can be told, why they
wait, and a priority field for those who may act on them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.forms import PriorityForm
from console.views.common import page
from scheduler_core import selectors
from scheduler_core.selectors.queue_order import pool_queues_in_order
from scheduler_core.selectors.submittable import submittable_projects
from scheduler_core.services import workloads as workload_services


def _context(request) -> dict:
    queues = selectors.queue_overview(user=request.user)
    ordered = pool_queues_in_order(queues)
    rows = [{"pool": q.pool, "ordered": ordered[q.pool.pk]} for q in queues]
    actable = set(submittable_projects(user=request.user).values_list("pk", flat=True))
    return {"queues": rows, "actable": actable}


@login_required
def queue(request):
    return page(request, "console/queue.html", "queue", _context(request))


@login_required
def queue_live(request):
    return render(request, "console/partials/_queue_live.html", _context(request))


@login_required
@require_POST
def queue_priority(request, pk: int):
    """Change a pending workload's priority from its queue row, then back to the queue."""
    workload = get_object_or_404(selectors.workload_list(user=request.user), pk=pk)
    form = PriorityForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Priority of {workload.name} must be a whole number.")
        return redirect("console:queue")
    try:
        workload_services.workload_set_priority(
            user=request.user, workload=workload, priority=form.cleaned_data["priority"]
        )
    except PermissionDenied:
        messages.error(request, f"You may not change the priority of {workload.name}.")
    except ValidationError as exc:
        messages.error(request, f"{workload.name}: {' '.join(exc.messages)}")
    else:
        messages.success(
            request,
            f"Priority of {workload.name} is now {form.cleaned_data['priority']}; "
            "it is re-ordered at the next cycle.",
        )
    return redirect("console:queue")
