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

    serializer_class: type[Serializer]
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


def queue_owner_schema(**summaries: str):
    """Document a queue-owner viewset's operations: each level words its own summaries;
    requests and responses come from the serializers it names."""

    def document(viewset: type[QueueOwnerViewSet]) -> type[QueueOwnerViewSet]:
        shown = viewset.serializer_class
        bodies: dict[str, dict] = {
            "create": {"request": viewset.create_serializer_class, "responses": {201: shown}},
            "partial_update": {
                "request": viewset.update_serializer_class,
                "responses": {200: shown},
            },
            "destroy": {"responses": {204: None}},
            "members": {"request": viewset.member_serializer_class, "responses": {200: shown}},
            "remove_member": {"request": None, "responses": {204: None}},
        }
        operations = {
            operation: extend_schema(summary=summary, **bodies.get(operation, {}))
            for operation, summary in summaries.items()
        }
        return extend_schema_view(**operations)(viewset)

    return document


@queue_owner_schema(
    list="List the departments you can see",
    retrieve="Show a department",
    create="Create a department (system admins)",
    partial_update="Change a department's rank, weight or description",
    destroy="Delete a department without projects (system admins)",
    members="Make a user an admin or viewer of the department (system admins)",
    remove_member="Remove a user from the department (system admins)",
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


@queue_owner_schema(
    list="List the projects you can see",
    retrieve="Show a project with its members",
    create="Create a project in a department you manage",
    partial_update="Change a project's rank, weight or description",
    destroy="Delete a project whose workloads have all finished",
    members="Add a member to the project or change their role",
    remove_member="Remove a member from the project",
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
