"""The one access rule, used by the API, the console, websocket subscriptions and selectors.

Roles:
- system admin: a superuser; sees and manages everything.
- department admin: DepartmentMembership(role=admin); sees and manages the projects, quotas
  and workloads of their departments.
- researcher: ProjectMembership(role=researcher); sees their projects, submits and acts on
  workloads there.
- viewer: a viewer membership of a project or department; reads only.

Query rules are expressed as Q objects over a field path so that every model's
`visible_to(user)` reuses the same definition. This module imports no models (the models
import it); where it queries one, it asks Django's app registry for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from django.apps import apps
from django.core.exceptions import PermissionDenied
from django.db.models import Q

from scheduler_core.choices import DepartmentRole, ProjectRole

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User

    from scheduler_core.models import Department, Project

    AnyUser = AbstractBaseUser | AnonymousUser


NOTHING = Q(pk__in=[])


def is_authenticated(user: AnyUser | None) -> TypeGuard[User]:
    return bool(user is not None and user.is_authenticated and user.is_active)


def is_system_admin(user: AnyUser | None) -> bool:
    """A system admin manages the whole cluster: pools, nodes, departments, every quota."""
    return is_authenticated(user) and bool(getattr(user, "is_superuser", False))


def require_system_admin(user: AnyUser | None, what: str) -> None:
    """Refuse unless `user` is a system admin; `what` ends the sentence "only system
    admins ...", e.g. "delete pools"."""
    if not is_system_admin(user):
        raise PermissionDenied(f"only system admins {what}")


def visible_project_ids(user: AnyUser | None) -> set[int] | None:
    """Ids of the projects `user` may see; None means every project (system admin)."""
    if is_system_admin(user):
        return None
    project = apps.get_model("scheduler_core", "Project")
    return set(project.objects.filter(project_q(user)).values_list("pk", flat=True).distinct())


def project_q(user: AnyUser | None, path: str = "") -> Q:
    """Projects `user` may see, as a Q over `path` (e.g. "project__" from Workload)."""
    if not is_authenticated(user):
        return NOTHING
    if is_system_admin(user):
        return Q()
    return Q(**{f"{path}memberships__user": user}) | Q(
        **{f"{path}department__memberships__user": user}
    )


def department_q(user: AnyUser | None, path: str = "") -> Q:
    """Departments `user` may see: their own, and those of projects they belong to."""
    if not is_authenticated(user):
        return NOTHING
    if is_system_admin(user):
        return Q()
    return Q(**{f"{path}memberships__user": user}) | Q(
        **{f"{path}projects__memberships__user": user}
    )


def visible_department_ids(user: AnyUser | None) -> set[int] | None:
    """Ids of the departments `user` may see; None means every department (system admin)."""
    if is_system_admin(user):
        return None
    department = apps.get_model("scheduler_core", "Department")
    return set(
        department.objects.filter(department_q(user)).values_list("pk", flat=True).distinct()
    )


def event_q(user: AnyUser | None) -> Q:
    """Scheduling events `user` may see: those of projects they see, those of departments
    they see (a department's own quota), and cluster-wide ones (neither)."""
    if not is_authenticated(user):
        return NOTHING
    if is_system_admin(user):
        return Q()
    project = apps.get_model("scheduler_core", "Project")
    department = apps.get_model("scheduler_core", "Department")
    return (
        Q(project__in=project.objects.filter(project_q(user)).values("pk"))
        | Q(
            project__isnull=True,
            department__in=department.objects.filter(department_q(user)).values("pk"),
        )
        | Q(project__isnull=True, department__isnull=True)
    )


def can_manage_department(user: AnyUser | None, department: Department) -> bool:
    """Department admins manage their departments' projects and quotas."""
    if is_system_admin(user):
        return True
    if not is_authenticated(user):
        return False
    return department.memberships.filter(user=user, role=DepartmentRole.ADMIN).exists()


def can_manage_project(user: AnyUser | None, project: Project) -> bool:
    """Whoever manages the project's department manages the project (settings, quotas)."""
    return can_manage_department(user, project.department)


def can_submit_to(user: AnyUser | None, project: Project) -> bool:
    """Researchers of the project and its managers may submit and act on its workloads.
    Researchers are asked first: they submit most, and are so answered by one query."""
    researcher = (
        is_authenticated(user)
        and not is_system_admin(user)
        and project.memberships.filter(user=user, role=ProjectRole.RESEARCHER).exists()
    )
    return researcher or can_manage_project(user, project)


def managed_department_ids(user: AnyUser | None) -> set[int] | None:
    """Ids of departments `user` administers; None means every department (system admin)."""
    if is_system_admin(user):
        return None
    if not is_authenticated(user):
        return set()
    membership = apps.get_model("scheduler_core", "DepartmentMembership")
    return set(
        membership.objects.filter(user=user, role=DepartmentRole.ADMIN).values_list(
            "department_id", flat=True
        )
    )


def is_any_admin(user: AnyUser | None) -> bool:
    """System admin or admin of at least one department (sees admin pages)."""
    ids = managed_department_ids(user)
    return ids is None or bool(ids)


def user_role_label(user: AnyUser | None) -> str:
    """A short label for the navigation bar."""
    if is_system_admin(user):
        return "system admin"
    if is_any_admin(user):
        return "department admin"
    if not is_authenticated(user):
        return "anonymous"
    membership = apps.get_model("scheduler_core", "ProjectMembership")
    if membership.objects.filter(user=user, role=ProjectRole.RESEARCHER).exists():
        return "researcher"
    return "viewer"
