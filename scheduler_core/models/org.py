"""Departments, projects and who belongs to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from scheduler_core import access
from scheduler_core.choices import DepartmentRole, ProjectRole
from scheduler_core.models.queue_owner import QueueOwner


class Department(QueueOwner):
    """A group of projects with its own quota per pool: the upper level of the queue tree.

    `rank` decides who is served over-quota first (higher first); `over_quota_weight`
    divides over-quota GPUs among departments of the same rank.
    """

    kind = "department"
    access_q = staticmethod(access.department_q)
    member_roles = DepartmentRole

    def managed_by(self, user) -> bool:
        return access.can_manage_department(user, self)


class DepartmentMembership(models.Model):
    """A user's role in a department: admin (manages it) or viewer (reads it)."""

    department = models.ForeignKey(Department, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="department_memberships"
    )
    role = models.CharField(max_length=16, choices=DepartmentRole.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["department", "user"], name="unique_department_member")
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.department}"


class Project(QueueOwner):
    """A team's queue: workloads are submitted to a project, which has a quota per pool.

    `rank` and `over_quota_weight` act among the projects of one department.
    """

    department = models.ForeignKey(Department, on_delete=models.PROTECT, related_name="projects")
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="ProjectMembership", related_name="projects"
    )

    kind = "project"
    access_q = staticmethod(access.project_q)
    member_roles = ProjectRole

    def managed_by(self, user) -> bool:
        return access.can_manage_project(user, self)


class ProjectMembership(models.Model):
    """A user's role in a project: researcher (submits) or viewer (reads)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=16, choices=ProjectRole.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="unique_project_member")
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"
