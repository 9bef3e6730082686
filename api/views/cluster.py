"""Node pools and nodes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from api.filters import NodeFilter
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
from scheduler_core.models import Node, NodePool
from scheduler_core.selectors.nodes import node_list, pool_list
from scheduler_core.services import cluster, removal


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

    def _show(self, node: Node, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=node.pk)
        return Response(NodeSerializer(fresh, context=self.get_serializer_context()).data, code)

    def list(self, request):
        return self.page(self.get_queryset(), NodeSerializer, **self.get_serializer_context())

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
