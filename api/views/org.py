"""Departments and projects, with their members: one viewset shape for both queue owners."""

from __future__ import annotations

from django.db.models import Model, Prefetch, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.serializers import Serializer

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
from scheduler_core.models.queue_owner import QueueOwner
from scheduler_core.services import org, removal

# Names in URLs: anything but slashes and control characters (which no name contains).
NAME_IN_URL = r"[^/\x00-\x1f]+"
USERNAME_IN_URL = NAME_IN_URL


class QueueOwnerViewSet(ApiViewSet):
    """What the department and project collections share: read, change settings, delete,
    and manage members, each through the same queue-owner services. A subclass names its
    model, serializers and the two services that differ (create, delete), and documents
    its operations."""

    lookup_field = "name"
    lookup_value_regex = NAME_IN_URL
    ordering_fields = ["name", "rank", "created_at"]
    ordering = ["name"]

    membership_model: type[Model]
    create_serializer_class: type[Serializer]
    update_serializer_class: type[Serializer]
    member_serializer_class: type[Serializer]

    def owners(self) -> QuerySet:
        """The owners the user may see, with what the serializer reads besides members."""
        raise NotImplementedError

    def create_owner(self, **values) -> QueueOwner:
        raise NotImplementedError

    def delete_owner(self, owner: QueueOwner) -> None:
        raise NotImplementedError

    def get_queryset(self):
        members = self.membership_model.objects.select_related("user").order_by("user__username")
        return self.owners().prefetch_related(Prefetch("memberships", queryset=members))

    def _fresh(self, owner: QueueOwner) -> dict:
        return self.serializer_class(self.get_queryset().get(pk=owner.pk)).data

    def list(self, request):
        return self.page(self.get_queryset(), self.serializer_class)

    def retrieve(self, request, name=None):
        return Response(self.serializer_class(self.get_object()).data)

    def create(self, request):
        owner = self.create_owner(**self.input(self.create_serializer_class))
        return Response(self._fresh(owner), status=status.HTTP_201_CREATED)

    def partial_update(self, request, name=None):
        owner = org.queue_owner_update(
            user=request.user,
            owner=self.get_object(),
            **self.input(self.update_serializer_class, partial=True),
        )
        return Response(self._fresh(owner))

    def destroy(self, request, name=None):
        self.delete_owner(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @action(detail=True, methods=["post"])
    def members(self, request, name=None):
        owner = self.get_object()
        org.queue_owner_set_member(
            user=request.user, owner=owner, **self.input(self.member_serializer_class)
        )
        return Response(self._fresh(owner))

    @action(
        detail=True,
        methods=["delete"],
        url_path=f"members/(?P<username>{USERNAME_IN_URL})",
        url_name="member",
    )
    def remove_member(self, request, name=None, username=None):
        org.queue_owner_remove_member(user=request.user, owner=self.get_object(), username=username)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(summary="List the departments you can see"),
    retrieve=extend_schema(summary="Show a department"),
    create=extend_schema(
        summary="Create a department (system admins)",
        request=DepartmentCreateSerializer,
        responses={201: DepartmentSerializer},
    ),
    partial_update=extend_schema(
        summary="Change a department's rank, weight or description",
        request=DepartmentUpdateSerializer,
        responses={200: DepartmentSerializer},
    ),
    destroy=extend_schema(
        summary="Delete a department without projects (system admins)",
        responses={204: None},
    ),
    members=extend_schema(
        summary="Make a user an admin or viewer of the department (system admins)",
        request=DepartmentMemberSetSerializer,
        responses={200: DepartmentSerializer},
    ),
    remove_member=extend_schema(
        summary="Remove a user from the department (system admins)",
        request=None,
        responses={204: None},
    ),
)
class DepartmentViewSet(QueueOwnerViewSet):
    """Departments: the upper level of the queue tree."""

    noun = "department"
    serializer_class = DepartmentSerializer
    create_serializer_class = DepartmentCreateSerializer
    update_serializer_class = DepartmentUpdateSerializer
    member_serializer_class = DepartmentMemberSetSerializer
    membership_model = DepartmentMembership

    def owners(self):
        return Department.objects.visible_to(self.request.user).prefetch_related("projects")

    def create_owner(self, **values):
        return org.department_create(user=self.request.user, **values)

    def delete_owner(self, owner):
        removal.department_delete(user=self.request.user, department=owner)


@extend_schema_view(
    list=extend_schema(summary="List the projects you can see"),
    retrieve=extend_schema(summary="Show a project with its members"),
    create=extend_schema(
        summary="Create a project in a department you manage",
        request=ProjectCreateSerializer,
        responses={201: ProjectSerializer},
    ),
    partial_update=extend_schema(
        summary="Change a project's rank, weight or description",
        request=ProjectUpdateSerializer,
        responses={200: ProjectSerializer},
    ),
    destroy=extend_schema(
        summary="Delete a project whose workloads have all finished",
        responses={204: None},
    ),
    members=extend_schema(
        summary="Add a member to the project or change their role",
        request=ProjectMemberSetSerializer,
        responses={200: ProjectSerializer},
    ),
    remove_member=extend_schema(
        summary="Remove a member from the project",
        request=None,
        responses={204: None},
    ),
)
class ProjectViewSet(QueueOwnerViewSet):
    """Projects: the team queues workloads are submitted to."""

    noun = "project"
    serializer_class = ProjectSerializer
    create_serializer_class = ProjectCreateSerializer
    update_serializer_class = ProjectUpdateSerializer
    member_serializer_class = ProjectMemberSetSerializer
    membership_model = ProjectMembership

    def owners(self):
        return Project.objects.visible_to(self.request.user).select_related("department")

    def create_owner(self, **values):
        return org.project_create(user=self.request.user, **values)

    def delete_owner(self, owner):
        removal.project_delete(user=self.request.user, project=owner)
