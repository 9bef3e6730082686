"""Departments and projects, with their members."""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from api.serializers.org import (
    DepartmentCreateSerializer,
    DepartmentMemberSetSerializer,
    DepartmentSerializer,
    DepartmentUpdateSerializer,
    ProjectCreateSerializer,
    ProjectMemberSetSerializer,
    ProjectSerializer,
    ProjectUpdateSerializer,
)
from api.views.base import ApiViewSet
from scheduler_core.models import (
    Department,
    DepartmentMembership,
    Project,
    ProjectMembership,
)
from scheduler_core.services import org, removal

# Names in URLs: anything but slashes and control characters (which no name contains).
NAME_IN_URL = r"[^/\x00-\x1f]+"
USERNAME_IN_URL = NAME_IN_URL


@extend_schema_view(
    list=extend_schema(summary="List the departments you can see"),
    retrieve=extend_schema(summary="Show a department"),
)
class DepartmentViewSet(ApiViewSet):
    """Departments: the upper level of the queue tree."""

    noun = "department"
    lookup_field = "name"
    lookup_value_regex = NAME_IN_URL
    serializer_class = DepartmentSerializer
    ordering_fields = ["name", "rank", "created_at"]
    ordering = ["name"]

    def get_queryset(self):
        return Department.objects.visible_to(self.request.user).prefetch_related(
            "projects",
            Prefetch(
                "memberships",
                queryset=DepartmentMembership.objects.select_related("user").order_by(
                    "user__username"
                ),
            ),
        )

    def _fresh(self, department: Department) -> dict:
        return DepartmentSerializer(self.get_queryset().get(pk=department.pk)).data

    def list(self, request):
        return self.page(self.get_queryset(), DepartmentSerializer)

    def retrieve(self, request, name=None):
        return Response(DepartmentSerializer(self.get_object()).data)

    @extend_schema(
        summary="Create a department (system admins)",
        request=DepartmentCreateSerializer,
        responses={201: DepartmentSerializer},
    )
    def create(self, request):
        department = org.department_create(
            user=request.user, **self.input(DepartmentCreateSerializer)
        )
        return Response(self._fresh(department), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a department's rank, weight or description",
        request=DepartmentUpdateSerializer,
        responses={200: DepartmentSerializer},
    )
    def partial_update(self, request, name=None):
        department = org.department_update(
            user=request.user,
            department=self.get_object(),
            **self.input(DepartmentUpdateSerializer, partial=True),
        )
        return Response(self._fresh(department))

    @extend_schema(
        summary="Delete a department without projects (system admins)",
        responses={204: None},
    )
    def destroy(self, request, name=None):
        removal.department_delete(user=request.user, department=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Make a user an admin or viewer of the department (system admins)",
        request=DepartmentMemberSetSerializer,
        responses={200: DepartmentSerializer},
    )
    @action(detail=True, methods=["post"])
    def members(self, request, name=None):
        department = self.get_object()
        org.department_set_member(
            user=request.user, department=department, **self.input(DepartmentMemberSetSerializer)
        )
        return Response(self._fresh(department))

    @extend_schema(
        summary="Remove a user from the department (system admins)",
        request=None,
        responses={204: None},
    )
    @action(
        detail=True,
        methods=["delete"],
        url_path=f"members/(?P<username>{USERNAME_IN_URL})",
        url_name="member",
    )
    def remove_member(self, request, name=None, username=None):
        removal.department_remove_member(
            user=request.user, department=self.get_object(), username=username
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(summary="List the projects you can see"),
    retrieve=extend_schema(summary="Show a project with its members"),
)
class ProjectViewSet(ApiViewSet):
    """Projects: the team queues workloads are submitted to."""

    noun = "project"
    lookup_field = "name"
    lookup_value_regex = NAME_IN_URL
    serializer_class = ProjectSerializer
    ordering_fields = ["name", "rank", "created_at"]
    ordering = ["name"]

    def get_queryset(self):
        return (
            Project.objects.visible_to(self.request.user)
            .select_related("department")
            .prefetch_related(
                Prefetch(
                    "memberships",
                    queryset=ProjectMembership.objects.select_related("user").order_by(
                        "user__username"
                    ),
                )
            )
        )

    def _fresh(self, project: Project) -> dict:
        return ProjectSerializer(self.get_queryset().get(pk=project.pk)).data

    def list(self, request):
        return self.page(self.get_queryset(), ProjectSerializer)

    def retrieve(self, request, name=None):
        return Response(ProjectSerializer(self.get_object()).data)

    @extend_schema(
        summary="Create a project in a department you manage",
        request=ProjectCreateSerializer,
        responses={201: ProjectSerializer},
    )
    def create(self, request):
        project = org.project_create(user=request.user, **self.input(ProjectCreateSerializer))
        return Response(self._fresh(project), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a project's rank, weight or description",
        request=ProjectUpdateSerializer,
        responses={200: ProjectSerializer},
    )
    def partial_update(self, request, name=None):
        project = org.project_update(
            user=request.user,
            project=self.get_object(),
            **self.input(ProjectUpdateSerializer, partial=True),
        )
        return Response(self._fresh(project))

    @extend_schema(
        summary="Delete a project whose workloads have all finished",
        responses={204: None},
    )
    def destroy(self, request, name=None):
        removal.project_delete(user=request.user, project=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Add a member to the project or change their role",
        request=ProjectMemberSetSerializer,
        responses={200: ProjectSerializer},
    )
    @action(detail=True, methods=["post"])
    def members(self, request, name=None):
        project = self.get_object()
        org.project_set_member(
            user=request.user, project=project, **self.input(ProjectMemberSetSerializer)
        )
        return Response(self._fresh(project))

    @extend_schema(
        summary="Remove a member from the project",
        request=None,
        responses={204: None},
    )
    @action(
        detail=True,
        methods=["delete"],
        url_path=f"members/(?P<username>{USERNAME_IN_URL})",
        url_name="member",
    )
    def remove_member(self, request, name=None, username=None):
        org.project_remove_member(user=request.user, project=self.get_object(), username=username)
        return Response(status=status.HTTP_204_NO_CONTENT)
