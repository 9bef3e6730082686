"""Node agents register their node with a join token."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from api.serializers.agents import AgentRegisteredSerializer, AgentRegisterSerializer
from api.serializers.errors import ErrorSerializer
from api.throttling import AgentRegistrationThrottle
from api.views.base import ApiView
from scheduler_core.services import agents as services


class AgentRegisterView(ApiView):
    """Registration of a node by its agent: the join token authenticates, no user does."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [AgentRegistrationThrottle]

    def get_authenticate_header(self, request) -> str:
        return 'JoinToken realm="agents"'  # a refused token is a 401, not a 403

    @extend_schema(
        summary="Register a node (node agents, with a join token)",
        description="Creates the node in the join token's pool, or updates the pool's node of "
        "that name (devices, CPU, memory), and returns a new node credential (the previous "
        "one stops working). Rate-limited per client address.",
        request=AgentRegisterSerializer,
        responses={
            201: AgentRegisteredSerializer,
            401: OpenApiResponse(ErrorSerializer, description="Wrong, expired or revoked token."),
            409: OpenApiResponse(ErrorSerializer, description="The name is another pool's node."),
        },
    )
    def post(self, request):
        serializer = AgentRegisterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            node, raw = services.agent_register(**serializer.validated_data)
        except services.JoinTokenInvalid as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        body = {"node": node.name, "pool": node.pool.name, "node_token": raw}
        return Response(AgentRegisteredSerializer(body).data, status=status.HTTP_201_CREATED)
