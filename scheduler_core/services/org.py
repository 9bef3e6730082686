"""Departments, projects and memberships."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from scheduler_core import access
from scheduler_core.choices import DepartmentRole, ProjectRole
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Department, DepartmentMembership, Project, ProjectMembership
from scheduler_core.services.errors import FieldErrors, check_slug_name


def _check_weight_rank(errors: FieldErrors, rank, weight) -> None:
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool)):
        errors.add("rank", f"must be a whole number, got {rank!r}")
    if weight is not None and (not isinstance(weight, int | float) or weight < 0):
        errors.add("over_quota_weight", f"must be a number of 0 or more, got {weight!r}")


def department_create(
    *, user, name: str, rank: int = 0, over_quota_weight: float = 1.0, description: str = ""
) -> Department:
    """Create a department (system admins)."""
    access.require_system_admin(user, "can do this")
    errors = FieldErrors()
    check_slug_name(errors, name)
    _check_weight_rank(errors, rank, over_quota_weight)
    if Department.objects.filter(name=name).exists():
        errors.add("name", f"a department named {name!r} already exists")
    errors.raise_if_any()
    return Department.objects.create(
        name=name, rank=rank, over_quota_weight=over_quota_weight, description=description
    )


def department_update(
    *,
    user,
    department: Department,
    rank: int | None = None,
    over_quota_weight: float | None = None,
    description: str | None = None,
) -> Department:
    """Change a department's rank, over-quota weight or description."""
    if not access.can_manage_department(user, department):
        raise PermissionDenied(f"you do not manage department {department}")
    errors = FieldErrors()
    _check_weight_rank(errors, rank, over_quota_weight)
    errors.raise_if_any()
    with transaction.atomic():
        if rank is not None:
            department.rank = rank
        if over_quota_weight is not None:
            department.over_quota_weight = over_quota_weight
        if description is not None:
            department.description = description
        department.save()
        request_cycle()
    return department


def project_create(
    *,
    user,
    department: Department,
    name: str,
    rank: int = 0,
    over_quota_weight: float = 1.0,
    description: str = "",
) -> Project:
    """Create a project in a department the user manages."""
    if not access.can_manage_department(user, department):
        raise PermissionDenied(f"you do not manage department {department}")
    errors = FieldErrors()
    check_slug_name(errors, name)
    _check_weight_rank(errors, rank, over_quota_weight)
    if Project.objects.filter(name=name).exists():
        errors.add("name", f"a project named {name!r} already exists")
    errors.raise_if_any()
    return Project.objects.create(
        department=department,
        name=name,
        rank=rank,
        over_quota_weight=over_quota_weight,
        description=description,
    )


def project_update(
    *,
    user,
    project: Project,
    rank: int | None = None,
    over_quota_weight: float | None = None,
    description: str | None = None,
) -> Project:
    """Change a project's rank, over-quota weight or description."""
    if not access.can_manage_project(user, project):
        raise PermissionDenied(f"you do not manage project {project}")
    errors = FieldErrors()
    _check_weight_rank(errors, rank, over_quota_weight)
    errors.raise_if_any()
    with transaction.atomic():
        if rank is not None:
            project.rank = rank
        if over_quota_weight is not None:
            project.over_quota_weight = over_quota_weight
        if description is not None:
            project.description = description
        project.save()
        request_cycle()
    return project


def _member_user(username: str):
    User = get_user_model()
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist as exc:
        raise ValidationError({"username": f"no user named {username!r}"}) from exc


def project_set_member(*, user, project: Project, username: str, role: str) -> ProjectMembership:
    """Add a user to a project or change their role there."""
    if not access.can_manage_project(user, project):
        raise PermissionDenied(f"you do not manage project {project}")
    if role not in ProjectRole.values:
        raise ValidationError({"role": f"must be one of {', '.join(ProjectRole.values)}"})
    member = _member_user(username)
    membership, _ = ProjectMembership.objects.update_or_create(
        project=project, user=member, defaults={"role": role}
    )
    return membership


def project_remove_member(*, user, project: Project, username: str) -> None:
    """Remove a user from a project."""
    if not access.can_manage_project(user, project):
        raise PermissionDenied(f"you do not manage project {project}")
    ProjectMembership.objects.filter(project=project, user__username=username).delete()


def department_set_member(
    *, user, department: Department, username: str, role: str
) -> DepartmentMembership:
    """Make a user an admin or viewer of a department (system admins)."""
    access.require_system_admin(user, "can do this")
    if role not in DepartmentRole.values:
        raise ValidationError({"role": f"must be one of {', '.join(DepartmentRole.values)}"})
    member = _member_user(username)
    try:
        membership, _ = DepartmentMembership.objects.update_or_create(
            department=department, user=member, defaults={"role": role}
        )
    except IntegrityError as exc:  # pragma: no cover - unique race
        raise ValidationError({"username": "membership changed concurrently"}) from exc
    return membership
