"""Workloads: submit (one or many), list, inspect, and act on them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from api.filters import WorkloadFilter
from api.idempotency import IDEMPOTENCY_PARAMETER, idempotent
from api.pagination import EventCursorPagination
from api.serializers.agents import LogQuerySerializer, WorkloadLogsSerializer
from api.serializers.events import EventSerializer
from api.serializers.workload_rows import ROW_FIELDS, workload_rows
from api.serializers.workloads import (
    WorkloadBulkSubmitSerializer,
    WorkloadDetailSerializer,
    WorkloadPrioritySerializer,
    WorkloadSerializer,
    WorkloadSubmitSerializer,
)
from api.throttling import SubmissionThrottle
from api.views.base import ApiViewSet
from api.views.events import event_page, event_queryset
from scheduler_core.models import Workload
from scheduler_core.selectors.agents import workload_logs
from scheduler_core.selectors.ports import with_open_ports
from scheduler_core.selectors.workloads import (
    as_just_submitted,
    workload_list,
    workloads_with_placements,
)
from scheduler_core.services import workloads as services

ACTION = extend_schema(request=None, responses={200: WorkloadDetailSerializer})
SUBMIT_ACTIONS = {"create", "bulk"}


@extend_schema_view(
    list=extend_schema(summary="List the workloads you can see"),
    retrieve=extend_schema(
        summary="Show a workload: pods, nodes, GPU devices, pending reason and queue position",
    ),
    cancel=extend_schema(summary="Cancel: free its pods; it will not run again"),
    suspend=extend_schema(summary="Suspend: free its pods and stop scheduling it"),
    resume=extend_schema(summary="Resume a suspended workload: back into its queue"),
)
class WorkloadViewSet(ApiViewSet):
    """Workloads submitted to projects."""

    noun = "workload"
    lookup_value_regex = r"[0-9]+"
    serializer_class = WorkloadSerializer
    filterset_class = WorkloadFilter
    ordering_fields = ["submitted_at", "priority", "name", "status", "queue_position", "id"]
    ordering = ["-submitted_at", "-id"]

    def get_queryset(self):
        workloads = workloads_with_placements(workload_list(user=self.request.user))
        # one workload answers in full (WorkloadDetailSerializer), its open ports included
        return workloads if self.action == "list" else with_open_ports(workloads)

    def get_throttles(self):
        if self.action in SUBMIT_ACTIONS:
            return [SubmissionThrottle()]
        return super().get_throttles()

    def _show(self, workload: Workload, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=workload.pk)
        return Response(WorkloadDetailSerializer(fresh).data, status=code)

    def list(self, request):
        # the rows WorkloadSerializer would write, built from column values (workload_rows)
        rows = self.filter_queryset(workload_list(user=request.user)).values(*ROW_FIELDS)
        return self.get_paginated_response(workload_rows(self.paginate_queryset(rows)))

    def retrieve(self, request, pk=None):
        return Response(WorkloadDetailSerializer(self.get_object()).data)

    @extend_schema(
        summary="Submit a workload",
        description="Queues a workload in a project you may submit to: single pod, gang "
        "(min_pods = pods), elastic (min_pods < pods), fractional GPUs (gpus < 1), "
        "multi-group gangs (`groups`), candidate pools in order of preference, node "
        "selector, priority and preemptibility. Rate-limited per token.",
        request=WorkloadSubmitSerializer,
        responses={201: WorkloadDetailSerializer},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    def create(self, request):
        attrs = self.input(WorkloadSubmitSerializer)
        submission = WorkloadSubmitSerializer.to_request(attrs)
        workload = services.workload_submit(user=request.user, request=submission)
        answer = as_just_submitted(workload, submission.pools)
        return Response(WorkloadDetailSerializer(answer).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Submit many workloads at once (all or nothing)",
        description="Every workload is validated first; if any is invalid none is queued "
        "and the errors name each one as `workloads[<index>].<field>`.",
        request=WorkloadBulkSubmitSerializer,
        responses={201: WorkloadSerializer(many=True)},
        parameters=[IDEMPOTENCY_PARAMETER],
    )
    @idempotent
    @action(detail=False, methods=["post"], pagination_class=None, filter_backends=[])
    def bulk(self, request):
        attrs = self.input(WorkloadBulkSubmitSerializer)
        created = services.workload_submit_bulk(
            user=request.user,
            requests=[WorkloadSubmitSerializer.to_request(w) for w in attrs["workloads"]],
        )
        fresh = self.get_queryset().filter(pk__in=[w.pk for w in created]).order_by("id")
        return Response(WorkloadSerializer(fresh, many=True).data, status=status.HTTP_201_CREATED)

    @ACTION
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        return self._show(services.workload_cancel(user=request.user, workload=self.get_object()))

    @ACTION
    @action(detail=True, methods=["post"])
    def suspend(self, request, pk=None):
        return self._show(services.workload_suspend(user=request.user, workload=self.get_object()))

    @ACTION
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return self._show(services.workload_resume(user=request.user, workload=self.get_object()))

    @extend_schema(
        summary="Change a workload's priority",
        request=WorkloadPrioritySerializer,
        responses={200: WorkloadDetailSerializer},
    )
    @action(detail=True, methods=["post"])
    def priority(self, request, pk=None):
        workload = self.get_object()
        priority = self.input(WorkloadPrioritySerializer)["priority"]
        return self._show(
            services.workload_set_priority(user=request.user, workload=workload, priority=priority)
        )

    @extend_schema(
        summary="The workload's events, newest first",
        responses={200: EventSerializer(many=True)},
    )
    @action(
        detail=True, methods=["get"], pagination_class=EventCursorPagination, filter_backends=[]
    )
    def events(self, request, pk=None):
        workload = self.get_object()
        return event_page(self, event_queryset(request.user).filter(workload=workload))

    @extend_schema(
        summary="The output of the workload's pods (node agents)",
        description="The newest run of each pod: stdout and stderr interleaved, from byte "
        "`since` on (at most 1 MiB per pod; `next_offset` says where to go on), or only its "
        "last `tail` lines.",
        parameters=[LogQuerySerializer],
        responses={200: WorkloadLogsSerializer},
    )
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def logs(self, request, pk=None):
        workload = self.get_object()
        query = LogQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        attrs = query.validated_data
        pod = None
        if "pod" in attrs:
            group, _, index = attrs["pod"].rpartition("-")
            pod = (group, int(index))
        try:
            logs = workload_logs(
                workload=workload, pod=pod, since=attrs["since"], tail=attrs.get("tail")
            )
        except OverflowError:
            raise serializers.ValidationError({"since": ["too large"]}) from None
        return Response(WorkloadLogsSerializer({"pods": logs}).data)
