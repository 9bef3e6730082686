"""Who am I, and my personal API tokens."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.response import Response

from api.authentication import SignInBasicAuthentication
from api.serializers.errors import ErrorSerializer
from api.serializers.tokens import (
    MeSerializer,
    TokenCreatedSerializer,
    TokenCreateSerializer,
    TokenSerializer,
)
from api.views.base import ApiView, ApiViewSet
from scheduler_core import access
from scheduler_core.models import ApiToken, Department, ProjectMembership
from scheduler_core.services import tokens


class MeView(ApiView):
    """The signed-in user."""

    @extend_schema(summary="Who you are and what you may do", responses={200: MeSerializer})
    def get(self, request):
        user = request.user
        managed = access.managed_department_ids(user)
        departments = (
            Department.objects.all()
            if managed is None
            else Department.objects.filter(pk__in=managed)
        )
        memberships = (
            ProjectMembership.objects.filter(user=user)
            .select_related("project")
            .order_by("project__name")
        )
        data = {
            "username": user.get_username(),
            "role": access.user_role_label(user),
            "is_system_admin": access.is_system_admin(user),
            "managed_departments": list(
                departments.order_by("name").values_list("name", flat=True)
            ),
            "projects": [{"project": m.project.name, "role": m.role} for m in memberships],
        }
        return Response(MeSerializer(data).data)


@extend_schema_view(list=extend_schema(summary="Your API tokens"))
class TokenViewSet(ApiViewSet):
    """Your personal API tokens for scripts."""

    noun = "token"
    lookup_value_regex = r"[0-9]+"
    serializer_class = TokenSerializer
    ordering_fields = ["created_at", "name", "last_used_at"]
    ordering = ["-created_at"]

    def get_authenticators(self):
        # A script's first token: `curl -u user:password -X POST .../tokens/`.
        authenticators = super().get_authenticators()
        request = getattr(self, "request", None)
        if request is not None and request.method == "POST":
            authenticators.insert(1, SignInBasicAuthentication())
        return authenticators

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user
            return ApiToken.objects.none()
        return ApiToken.objects.filter(user=self.request.user)

    def list(self, request):
        return self.page(self.get_queryset(), TokenSerializer)

    @extend_schema(
        summary="Create a token: its key is shown once, in this response",
        description="Also accepts HTTP Basic authentication (username and password), so a "
        "script can get its first token: `curl -u alice -X POST .../api/v1/tokens/ -H "
        "'Content-Type: application/json' -d '{\"name\": \"laptop\"}'`. Failed "
        "passwords are limited per username and per client address: past the limit the "
        "answer is 429 with `Retry-After` until the window ends.",
        request=TokenCreateSerializer,
        responses={
            201: TokenCreatedSerializer,
            429: OpenApiResponse(
                ErrorSerializer,
                description="Too many failed sign-ins for this username or from this "
                "address: wait `retry_after` seconds.",
            ),
        },
    )
    def create(self, request):
        token, raw = tokens.token_create(user=request.user, **self.input(TokenCreateSerializer))
        data = TokenCreatedSerializer({**TokenSerializer(token).data, "key": raw}).data
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Revoke one of your tokens", responses={204: None})
    def destroy(self, request, pk=None):
        tokens.token_revoke(user=request.user, token=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
