"""The workloads list: search, filters applied as they are chosen, sortable columns, a
pool, a run-time and a times-preempted column, active workloads only unless asked, and
bulk cancel / priority (rows update in place from live events; new ones are counted
behind "N new")."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import F, QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from console.forms import BulkActionForm, WorkloadFilterForm
from console.views.common import is_htmx, page
from scheduler_core import selectors
from scheduler_core.choices import ACTIVE_STATES
from scheduler_core.models import Project, Workload
from scheduler_core.selectors.submittable import submittable_projects
from scheduler_core.selectors.workloads import (
    pools_of,
    workload_ids_in_pool,
    workload_list_rows,
)
from scheduler_core.services import workloads as workload_services

PAGE_SIZE = 100
COLUMNS = [  # (label, sort key or "", numeric)
    ("", "", False),
    ("Workload", "name", False),
    ("Project", "project", False),
    ("Status", "status", False),
    ("Queue", "", True),
    ("GPUs", "gpus", True),
    ("Priority", "", True),
    ("Pool", "", False),
    ("Nodes", "", False),
    ("Submitted", "submitted", False),
    ("Run time", "runtime", True),
    ("Preempted", "preemptions", True),
    ("Pending reason", "", False),
]


def _filtered(request) -> tuple[WorkloadFilterForm, QuerySet[Workload], str]:
    """The filter form, the workloads it lets through in its order, and that order."""
    projects = Project.objects.visible_to(request.user).order_by("name")
    form = WorkloadFilterForm(request.GET or None, projects=projects)
    qs = workload_list_rows(selectors.workload_list(user=request.user))
    data = form.cleaned_data if form.is_valid() else {}
    status = data.get("status") or "active"
    if status == "active":
        qs = qs.filter(status__in=ACTIVE_STATES)
    elif status != "all":
        qs = qs.filter(status=status)
    if data.get("q"):
        qs = qs.filter(name__icontains=data["q"].strip())
    if data.get("project"):
        qs = qs.filter(project=data["project"])
    if data.get("pool"):
        qs = qs.filter(pk__in=workload_ids_in_pool(data["pool"]))
    if data.get("kind"):
        qs = qs.filter(kind=data["kind"])
    if data.get("user"):
        qs = qs.filter(submitted_by__username=data["user"].strip())
    sort = data.get("sort") or ""
    key = WorkloadFilterForm.SORTS.get(sort.lstrip("-"))
    if key:
        column = F(key)
        descending = sort.startswith("-")
        field = column.desc(nulls_last=True) if descending else column.asc(nulls_last=True)
        qs = qs.order_by(field, "-submitted_at", "-id")
    return form, qs, sort


@dataclass
class Header:
    label: str
    href: str
    numeric: bool
    direction: str  # "ascending" | "descending" | ""


def _headers(request, sort: str) -> list[Header]:
    """Column headings; a sortable one links to its order (again: the other direction)."""
    headers = []
    for label, key, numeric in COLUMNS:
        href = direction = ""
        if key:
            query = request.GET.copy()
            query.pop("page", None)
            query["sort"] = f"-{key}" if sort == key else key
            href = f"?{query.urlencode()}"
            direction = "ascending" if sort == key else "descending" if sort == f"-{key}" else ""
        headers.append(Header(label, href, numeric, direction))
    return headers


def _groups(form: WorkloadFilterForm) -> str:
    """Subscribe to one project when the list shows one, else the cluster feed (which only
    forwards events of projects the user may see)."""
    if form.is_bound and form.is_valid() and form.cleaned_data.get("project"):
        return f"project-{form.cleaned_data['project'].pk}"
    return "cluster"


def _rows(workloads) -> list[Workload]:
    rows = list(workloads)
    for w in rows:
        w.pool_names = pools_of(w)
    return rows


def _actable(user) -> set[int]:
    return set(submittable_projects(user=user).values_list("pk", flat=True))


@login_required
def workload_list(request):
    form, qs, sort = _filtered(request)
    paginator = Paginator(qs, PAGE_SIZE)
    page_obj = paginator.get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("fragment", None)
    context = {
        "form": form,
        "workloads": _rows(page_obj.object_list),
        "page_obj": page_obj,
        "query": query.urlencode(),
        "headers": _headers(request, sort),
        "live_groups": _groups(form),
        "actable": _actable(request.user),
    }
    if is_htmx(request) and request.GET.get("fragment") == "rows":
        return render(request, "console/workloads/_rows.html", context)
    return page(request, "console/workloads/list.html", "workloads", context)


@login_required
def workload_row(request, pk: int):
    """One row, for a workload submitted while the list is open (204 if the filters hide it)."""
    _, qs, _ = _filtered(request)
    workload = qs.filter(pk=pk).first()
    if workload is None:
        return HttpResponse(status=204)
    (workload,) = _rows([workload])
    return render(
        request,
        "console/workloads/_row.html",
        {"w": workload, "actable": _actable(request.user)},
    )


def _back(request):
    target = request.POST.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect("console:workloads")


@login_required
@require_POST
def workload_bulk(request):
    """Cancel, or set the priority of, the ticked workloads: each through its service, and
    what was not done is said per workload."""
    form = BulkActionForm(request.POST)
    if not form.is_valid():
        if "ids" in form.errors:
            messages.error(request, "Tick the workloads to act on first.")
        else:
            for errors in form.errors.values():
                for error in errors:
                    messages.error(request, error)
        return _back(request)
    action = form.cleaned_data["action"]
    priority = form.cleaned_data.get("priority")
    ids = form.cleaned_data["ids"]
    found = {w.pk: w for w in selectors.workload_list(user=request.user).filter(pk__in=ids)}
    done: list[str] = []
    failed: list[str] = []
    for pk in ids:
        workload = found.get(pk)
        if workload is None:
            failed.append(f"#{pk}: not found, or you cannot see it")
            continue
        try:
            if action == "cancel":
                workload_services.workload_cancel(user=request.user, workload=workload)
            else:
                workload_services.workload_set_priority(
                    user=request.user, workload=workload, priority=priority
                )
        except PermissionDenied:
            failed.append(f"{workload.name}: you may not act on project {workload.project.name}")
        except ValidationError as exc:
            failed.append(f"{workload.name}: {' '.join(exc.messages)}")
        else:
            done.append(workload.name)
    verb = "Cancelled" if action == "cancel" else f"Priority set to {priority} for"
    if done:
        messages.success(request, f"{verb} {len(done)}: {', '.join(done)}.")
    if failed:
        messages.error(request, f"Not done for {len(failed)}: " + "; ".join(failed) + ".")
    return _back(request)
