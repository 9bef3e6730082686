"""Departments, projects and who belongs to them."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from scheduler_core import access
from scheduler_core.choices import DepartmentRole, ProjectRole


class DepartmentQuerySet(models.QuerySet):
    def visible_to(self, user) -> DepartmentQuerySet:
        """Departments `user` may see (the shared access rule)."""
        ids = Department.objects.filter(access.department_q(user)).values("pk")
        return self.filter(pk__in=ids)


class Department(models.Model):
    """A group of projects with its own quota per pool: the upper level of the queue tree.

    `rank` decides who is served over-quota first (higher first); `over_quota_weight`
    divides over-quota GPUs among departments of the same rank.
    """

    name = models.SlugField(max_length=63, unique=True)
    description = models.CharField(max_length=255, blank=True)
    rank = models.IntegerField(default=0)
    over_quota_weight = models.FloatField(default=1.0, validators=[MinValueValidator(0)])
    created_at = models.DateTimeField(auto_now_add=True)

    objects = DepartmentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(over_quota_weight__gte=0), name="department_weight_gte_0"
            )
        ]

    def __str__(self) -> str:
        return self.name


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


class ProjectQuerySet(models.QuerySet):
    def visible_to(self, user) -> ProjectQuerySet:
        """Projects `user` may see (the shared access rule)."""
        ids = Project.objects.filter(access.project_q(user)).values("pk")
        return self.filter(pk__in=ids)


class Project(models.Model):
    """A team's queue: workloads are submitted to a project, which has a quota per pool.

    `rank` and `over_quota_weight` act among the projects of one department.
    """

    department = models.ForeignKey(Department, on_delete=models.PROTECT, related_name="projects")
    name = models.SlugField(max_length=63, unique=True)
    description = models.CharField(max_length=255, blank=True)
    rank = models.IntegerField(default=0)
    over_quota_weight = models.FloatField(default=1.0, validators=[MinValueValidator(0)])
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="ProjectMembership", related_name="projects"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(over_quota_weight__gte=0), name="project_weight_gte_0"
            )
        ]

    def __str__(self) -> str:
        return self.name


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
