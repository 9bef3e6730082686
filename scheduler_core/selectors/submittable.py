"""Projects a user may submit to."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from scheduler_core import access
from scheduler_core.choices import DepartmentRole, ProjectRole
from scheduler_core.models import Project


def submittable_projects(*, user) -> QuerySet[Project]:
    """Projects where `user` is a researcher, or whose department they manage (1 query).

    The same rule as `access.can_submit_to`, as one query for a form's choices.
    """
    if not access.is_authenticated(user):
        return Project.objects.none()
    qs = Project.objects.select_related("department").order_by("name")
    if access.is_system_admin(user):
        return qs
    ids = Project.objects.filter(
        Q(memberships__user=user, memberships__role=ProjectRole.RESEARCHER)
        | Q(
            department__memberships__user=user,
            department__memberships__role=DepartmentRole.ADMIN,
        )
    ).values("pk")
    return qs.filter(pk__in=ids)
