"""What-if runs: create from a scenario or the live cluster, poll progress, read results."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from api.serializers.simulations import (
    SimulationCreateSerializer,
    SimulationDetailSerializer,
    SimulationPreviewResultSerializer,
    SimulationPreviewSerializer,
    SimulationScenarioSerializer,
    SimulationSerializer,
)
from api.throttling import SubmissionThrottle
from api.views.base import ApiViewSet
from scheduler_core.choices import SimulationSource
from scheduler_core.models import Simulation
from scheduler_core.selectors.simulations import (
    simulation_figures_of,
    simulation_result_for,
    simulation_rows_visible_to,
    simulation_scenario_for,
    simulations_visible_to,
)
from scheduler_core.services import simulations as services
from scheduler_core.services.errors import Conflict

HEAVY_ACTIONS = {"create", "preview"}


@extend_schema_view(
    list=extend_schema(summary="Your what-if runs (all of them for system admins)"),
)
class SimulationViewSet(ApiViewSet):
    """What-if runs in a worker. Admins (system and department) may create them."""

    noun = "simulation"
    lookup_value_regex = r"[0-9]+"
    serializer_class = SimulationSerializer
    ordering_fields = ["created_at", "name", "status"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self):
        return simulations_visible_to(self.request.user)

    def get_throttles(self):
        if self.action in HEAVY_ACTIONS:
            return [SubmissionThrottle()]
        return super().get_throttles()

    def _detail(self, simulation: Simulation, code: int = status.HTTP_200_OK) -> Response:
        # read by SimulationDetailSerializer (source="visible_result", "visible_figures")
        result = simulation_result_for(simulation=simulation, user=self.request.user)
        simulation.visible_result = result  # type: ignore[attr-defined]
        simulation.visible_figures = simulation_figures_of(result)  # type: ignore[attr-defined]
        return Response(SimulationDetailSerializer(simulation).data, status=code)

    def list(self, request):
        return self.page(simulation_rows_visible_to(request.user), SimulationSerializer)

    @extend_schema(summary="A run's progress, and its result once it has succeeded")
    def retrieve(self, request, pk=None):
        return self._detail(self.get_object())

    @extend_schema(
        summary="Start a what-if run",
        description="From a scenario file (`source: scenario`, `scenario_text`) or from a "
        "copy of the live cluster (`source: live`), optionally with `changes`, compared "
        "with the unchanged run; or a job trace (`source: trace`, `trace_text`, `trace`) "
        "replayed through the engine, FIFO and FIFO with backfill. It runs in a worker: "
        "poll GET /simulations/<id>/ for `progress` and, once `status` is succeeded, `result`.",
        request=SimulationCreateSerializer,
        responses={201: SimulationDetailSerializer},
    )
    def create(self, request):
        simulation = services.simulation_create(
            user=request.user, **self.input(SimulationCreateSerializer)
        )
        return self._detail(simulation, status.HTTP_201_CREATED)

    @extend_schema(summary="Delete a finished run (its creator or a system admin)")
    def destroy(self, request, pk=None):
        services.simulation_delete(user=request.user, simulation=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="The scenario the run replays",
        description="A department admin's copy of the live cluster leaves out the projects "
        "they may not see (as its result folds them together).",
        responses={200: SimulationScenarioSerializer},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def scenario(self, request, pk=None):
        simulation = self.get_object()
        if simulation.source == SimulationSource.TRACE:
            raise Conflict({"source": ["a trace run replays a trace, not a scenario"]})
        text = simulation_scenario_for(simulation=simulation, user=request.user)
        return Response({"scenario_text": text})

    @extend_schema(
        summary="Try changes on the live cluster now, without storing a run",
        description="A short what-if computed in the request (at most a day of simulated "
        "time): what would these quota/weight/pool/node changes do? Longer runs: POST "
        "/simulations/.",
        request=SimulationPreviewSerializer,
        responses={200: SimulationPreviewResultSerializer},
    )
    @action(detail=False, methods=["post"], filter_backends=[], pagination_class=None)
    def preview(self, request):
        result = services.simulation_preview(
            user=request.user, **self.input(SimulationPreviewSerializer)
        )
        return Response({"result": result})
