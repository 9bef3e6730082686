"""Node pools and nodes."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from api.filters import NodeFilter
from api.serializers.agents import (
    JoinTokenCreatedSerializer,
    JoinTokenCreateSerializer,
    JoinTokenSerializer,
)
from api.serializers.cluster import (
    NodeCreateSerializer,
    NodeSerializer,
    PoolCreateSerializer,
    PoolSerializer,
    PoolSettingsSerializer,
)
from api.views.base import ApiViewSet
from api.views.org import NAME_IN_URL
from scheduler_core import access
from scheduler_core.models import JoinToken, Node, NodePool
from scheduler_core.selectors.agents import join_tokens_of, latest_gpu_samples
from scheduler_core.selectors.nodes import node_list, pool_list
from scheduler_core.services import agents, cluster, removal


@extend_schema_view(
    list=extend_schema(summary="List the node pools"),
    retrieve=extend_schema(summary="Show a node pool and its settings"),
)
class PoolViewSet(ApiViewSet):
    """Node pools: sets of nodes scheduled together, each with its own policy."""

    noun = "pool"
    lookup_field = "name"
    lookup_value_regex = NAME_IN_URL
    serializer_class = PoolSerializer
    ordering_fields = ["name", "created_at"]
    ordering = ["name"]

    def get_queryset(self):
        return pool_list(user=self.request.user)

    def _fresh(self, pool: NodePool) -> dict:
        return PoolSerializer(self.get_queryset().get(pk=pool.pk)).data

    def list(self, request):
        return self.page(self.get_queryset(), PoolSerializer)

    def retrieve(self, request, name=None):
        return Response(PoolSerializer(self.get_object()).data)

    @extend_schema(
        summary="Create a node pool (system admins)",
        request=PoolCreateSerializer,
        responses={201: PoolSerializer},
    )
    def create(self, request):
        pool = cluster.pool_create(user=request.user, **self.input(PoolCreateSerializer))
        return Response(self._fresh(pool), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Change a pool's policy or scheduling settings (system admins)",
        request=PoolSettingsSerializer,
        responses={200: PoolSerializer},
    )
    def partial_update(self, request, name=None):
        pool = cluster.pool_update(
            user=request.user,
            pool=self.get_object(),
            **self.input(PoolSettingsSerializer, partial=True),
        )
        return Response(self._fresh(pool))

    @extend_schema(summary="Delete an empty pool (system admins)", responses={204: None})
    def destroy(self, request, name=None):
        removal.pool_delete(user=request.user, pool=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _token_data(self, token: JoinToken) -> dict:
        token.state = agents.join_token_state(token)  # type: ignore[attr-defined]
        return JoinTokenSerializer(token).data

    @extend_schema(
        methods=["GET"],
        summary="The pool's join tokens (system admins)",
        responses={200: JoinTokenSerializer(many=True)},
    )
    @extend_schema(
        methods=["POST"],
        summary="Create a join token: agents register nodes in the pool with it (system admins)",
        description="The token is shown once, in this response, with the command to run on a node.",
        request=JoinTokenCreateSerializer,
        responses={201: JoinTokenCreatedSerializer},
    )
    @action(detail=True, methods=["get", "post"], url_path="join-tokens", filter_backends=[])
    def join_tokens(self, request, name=None):
        pool = self.get_object()
        access.require_system_admin(request.user, "manage join tokens")
        if request.method == "GET":
            page = self.paginate_queryset(join_tokens_of(pool))
            return self.get_paginated_response([self._token_data(t) for t in page])
        attrs = self.input(JoinTokenCreateSerializer)
        expires_in = attrs["expires_in"]
        token, raw = agents.join_token_create(
            pool=pool,
            by=request.user,
            description=attrs["description"],
            expires_at=timezone.now() + timedelta(seconds=expires_in) if expires_in else None,
            single_use=attrs["single_use"],
        )
        command = agents.agent_command_line(server=request.build_absolute_uri("/"), join_token=raw)
        data = {**self._token_data(token), "token": raw, "command": command}
        return Response(JoinTokenCreatedSerializer(data).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke a join token (system admins)",
        request=None,
        responses={200: JoinTokenSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"join-tokens/(?P<token_id>[0-9]+)/revoke",
        filter_backends=[],
    )
    def revoke_join_token(self, request, name=None, token_id=None):
        pool = self.get_object()
        access.require_system_admin(request.user, "manage join tokens")
        token = join_tokens_of(pool).filter(pk=int(token_id or 0)).first()
        if token is None:
            raise NotFound(f"no join token {token_id} in pool {pool.name}")
        return Response(self._token_data(agents.join_token_revoke(token=token, by=request.user)))


NODE_ACTION = extend_schema(request=None, responses={200: NodeSerializer})


@extend_schema_view(
    list=extend_schema(summary="List the nodes and what runs on them"),
    retrieve=extend_schema(summary="Show a node and its pods"),
    cordon=extend_schema(summary="Cordon: take no new pods (system admins)"),
    uncordon=extend_schema(summary="Uncordon: take pods again (system admins)"),
    drain=extend_schema(
        summary="Drain: cordon and re-queue the node's workloads elsewhere (system admins)"
    ),
)
class NodeViewSet(ApiViewSet):
    """Nodes: the machines with GPUs."""

    noun = "node"
    lookup_field = "name"
    lookup_value_regex = NAME_IN_URL
    serializer_class = NodeSerializer
    filterset_class = NodeFilter
    ordering_fields = ["name", "gpu_count", "state", "created_at"]
    ordering = ["pool__name", "name"]

    def get_queryset(self):
        return node_list(user=self.request.user)

    def get_serializer_context(self):
        return {
            **super().get_serializer_context(),
            "visible_project_ids": access.visible_project_ids(self.request.user),
        }

    def _context(self, nodes: list[Node]) -> dict:
        """The serializer's context: who sees which pods, the nodes' latest GPU samples."""
        return {
            **self.get_serializer_context(),
            "gpu_samples": latest_gpu_samples([n.pk for n in nodes]),
        }

    def _show(self, node: Node, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=node.pk)
        return Response(NodeSerializer(fresh, context=self._context([fresh])).data, code)

    def list(self, request):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        nodes = list(page) if page is not None else []
        data = NodeSerializer(nodes, many=True, context=self._context(nodes)).data
        return self.get_paginated_response(data)

    def retrieve(self, request, name=None):
        return self._show(self.get_object())

    @extend_schema(
        summary="Add a node to a pool (system admins)",
        request=NodeCreateSerializer,
        responses={201: NodeSerializer},
    )
    def create(self, request):
        node = cluster.node_create(user=request.user, **self.input(NodeCreateSerializer))
        return self._show(node, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Remove a node without pods (system admins; drain it first)",
        responses={204: None},
    )
    def destroy(self, request, name=None):
        removal.node_delete(user=request.user, node=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @NODE_ACTION
    @action(detail=True, methods=["post"])
    def cordon(self, request, name=None):
        return self._show(cluster.node_cordon(user=request.user, node=self.get_object()))

    @NODE_ACTION
    @action(detail=True, methods=["post"])
    def uncordon(self, request, name=None):
        return self._show(cluster.node_uncordon(user=request.user, node=self.get_object()))

    @NODE_ACTION
    @action(detail=True, methods=["post"])
    def drain(self, request, name=None):
        return self._show(cluster.node_drain(user=request.user, node=self.get_object()))

    @extend_schema(
        summary="Revoke the node's agent credential (system admins)",
        description="Its agent is refused and its open connections are closed at once; it "
        "may register again with a join token. Its runs fence themselves if it stays away.",
        request=None,
        responses={200: NodeSerializer},
    )
    @action(detail=True, methods=["post"], url_path="revoke-credential")
    def revoke_credential(self, request, name=None):
        node = self.get_object()
        agents.node_credential_revoke(node=node, by=request.user)
        return self._show(node)
