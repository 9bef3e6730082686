"""The organisation: departments and their projects, their settings and members.

Both are queue owners, so one set of views serves both (`kind` in the URL). Who may change
what is the services' rule (`require_manager`, `require_admin_above`), asked before a form
is even read: a page offers only what its reader may do, and a POST from anyone else is
refused with 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from console.forms import (
    MemberForm,
    QueueOwnerCreateForm,
    QueueOwnerSettingsForm,
    through_service,
)
from console.permissions import admin_required, system_admin_required
from console.views.common import page
from console.views.confirm import confirm_delete, plural
from scheduler_core import access
from scheduler_core.choices import TERMINAL_STATES
from scheduler_core.models import Department, Project, Quota, Workload
from scheduler_core.models.queue_owner import QueueOwner
from scheduler_core.services import org, removal

OWNERS: dict[str, type[Department] | type[Project]] = {"department": Department, "project": Project}


def owner_or_404(user, kind: str, pk: int) -> QueueOwner:
    """The department or project `pk`, if `user` may see it."""
    if kind not in OWNERS:
        raise Http404
    return get_object_or_404(OWNERS[kind].objects.visible_to(user), pk=pk)


def manages_level_above(user, owner: QueueOwner) -> bool:
    """Whether `user` sets `owner`'s standing among its peers (rank, weight), its quotas
    and its members: system admins for a department, its department's admins for a project."""
    try:
        org.require_admin_above(user, owner, "can do this")
    except PermissionDenied:
        return False
    return True


def owner_url(owner: QueueOwner) -> str:
    return reverse("console:owner_detail", args=[owner.kind, owner.pk])


def managed_departments(user) -> QuerySet[Department]:
    """Departments `user` may create projects in."""
    ids = access.managed_department_ids(user)
    departments = Department.objects.order_by("name")
    return departments if ids is None else departments.filter(pk__in=ids)


# The organisation page: departments with their projects, and the create forms.


def _org_page(request, *, department_form=None, project_form=None):
    user = request.user
    projects: dict[int, list[Project]] = {}
    for project in (
        Project.objects.visible_to(user)
        .annotate(member_count=Count("memberships"))
        .order_by("-rank", "name")
    ):
        projects.setdefault(project.department_id, []).append(project)
    departments = (
        Department.objects.visible_to(user)
        .annotate(member_count=Count("memberships"))
        .order_by("-rank", "name")
    )
    context: dict[str, Any] = {
        "departments": [(d, projects.get(d.pk, [])) for d in departments],
    }
    if access.is_system_admin(user):
        context["department_form"] = department_form or QueueOwnerCreateForm(prefix="department")
    managed = managed_departments(user)
    if managed.exists():
        context["project_form"] = project_form or QueueOwnerCreateForm(
            prefix="project", departments=managed
        )
    return page(request, "console/org/index.html", "org", context)


@login_required
def org_index(request):
    return _org_page(request)


def _create(request, form: QueueOwnerCreateForm, create, page_forms: dict):
    owner = through_service(form, create, user=request.user)
    if owner is None:
        return _org_page(request, **page_forms)
    messages.success(request, f"Created {owner.kind} {owner.name}.")
    return redirect(owner_url(owner))


@system_admin_required
@require_POST
def department_create(request):
    form = QueueOwnerCreateForm(request.POST, prefix="department")
    return _create(request, form, org.department_create, {"department_form": form})


@admin_required
@require_POST
def project_create(request):
    form = QueueOwnerCreateForm(
        request.POST, prefix="project", departments=managed_departments(request.user)
    )
    return _create(request, form, org.project_create, {"project_form": form})


# A department's or project's own page: settings, members, projects, quotas.


def _owner_page(request, owner: QueueOwner, *, settings_form=None, member_form=None):
    user = request.user
    above = manages_level_above(user, owner)
    context: dict[str, Any] = {
        "owner": owner,
        "above": above,
        "members": owner.memberships.select_related("user").order_by("user__username"),
        "quotas": Quota.objects.for_owner(owner).select_related("pool").order_by("pool__name"),
    }
    if isinstance(owner, Department):
        context["projects"] = Project.objects.visible_to(user).filter(department=owner)
    if owner.managed_by(user):
        context["settings_form"] = settings_form or QueueOwnerSettingsForm(
            standing=above,
            initial={
                "description": owner.description,
                "rank": owner.rank,
                "over_quota_weight": owner.over_quota_weight,
            },
        )
    if above:
        context["member_form"] = member_form or MemberForm(owner=owner)
    return page(request, "console/org/owner.html", "org", context)


@login_required
def owner_detail(request, kind: str, pk: int):
    return _owner_page(request, owner_or_404(request.user, kind, pk))


@login_required
@require_POST
def owner_settings(request, kind: str, pk: int):
    owner = owner_or_404(request.user, kind, pk)
    org.require_manager(request.user, owner)
    form = QueueOwnerSettingsForm(request.POST, standing=manages_level_above(request.user, owner))
    if through_service(form, org.queue_owner_update, user=request.user, owner=owner) is None:
        return _owner_page(request, owner, settings_form=form)
    messages.success(request, f"Saved the settings of {owner.name}.")
    return redirect(owner_url(owner))


@login_required
@require_POST
def owner_member_set(request, kind: str, pk: int):
    owner = owner_or_404(request.user, kind, pk)
    org.require_admin_above(request.user, owner, "change department members")
    form = MemberForm(request.POST, owner=owner)
    membership = through_service(form, org.queue_owner_set_member, user=request.user, owner=owner)
    if membership is None:
        return _owner_page(request, owner, member_form=form)
    role = membership.get_role_display().lower()
    messages.success(request, f"{membership.user.username} is {role} of {owner.name}.")
    return redirect(owner_url(owner))


@login_required
@require_POST
def owner_member_remove(request, kind: str, pk: int):
    owner = owner_or_404(request.user, kind, pk)
    username = request.POST.get("username", "")
    org.queue_owner_remove_member(user=request.user, owner=owner, username=username)
    messages.success(request, f"{username} is no longer a member of {owner.name}.")
    return redirect(owner_url(owner))


def _deletion_effects(owner: QueueOwner) -> list[str]:
    """What deleting `owner` does, and what would stop it (removal's rules, in words)."""
    quotas = Quota.objects.for_owner(owner).count()
    members = owner.memberships.count()
    goes = (
        f"Its quotas in {plural(quotas, 'pool')} and the roles of its "
        f"{plural(members, 'member')} go with it."
    )
    if isinstance(owner, Department):
        return [*_department_effects(owner), goes]
    assert isinstance(owner, Project)
    return [*_project_effects(owner), goes]


def _department_effects(department: Department) -> list[str]:
    projects = list(department.projects.values_list("name", flat=True))
    if not projects:
        return ["It has no projects."]
    return [
        f"It still has {plural(len(projects), 'project')} ({', '.join(projects)}): "
        "deleting is refused until they are deleted."
    ]


def _project_effects(project: Project) -> list[str]:
    workloads = Workload.objects.filter(project=project)
    unfinished = workloads.exclude(status__in=TERMINAL_STATES).count()
    finished = workloads.count() - unfinished
    effects = []
    if unfinished:
        effects.append(
            f"It has {plural(unfinished, 'unfinished workload')}: deleting is refused until "
            "they are cancelled or finish."
        )
    if finished:
        effects.append(
            f"Its {plural(finished, 'finished workload')} and their events are deleted for good."
        )
    return effects or ["It has no workloads."]


@login_required
def owner_delete(request, kind: str, pk: int):
    owner = owner_or_404(request.user, kind, pk)
    org.require_admin_above(request.user, owner, "delete departments")

    def delete() -> None:
        if isinstance(owner, Department):
            removal.department_delete(user=request.user, department=owner)
        else:
            assert isinstance(owner, Project)
            removal.project_delete(user=request.user, project=owner)

    return confirm_delete(
        request,
        what=f"{owner.kind} {owner.name}",
        effects=_deletion_effects(owner),
        delete=delete,
        done_url=reverse("console:org"),
        cancel_url=owner_url(owner),
        page_key="org",
    )
