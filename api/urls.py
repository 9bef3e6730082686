"""API routes: version 1 under /api/v1/, the OpenAPI schema and its docs."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from api.docs import local_assets_only
from api.exceptions import not_found_view
from api.views.account import MeView, TokenViewSet
from api.views.agents import AgentRegisterView
from api.views.cluster import NodeViewSet, PoolViewSet
from api.views.events import EventViewSet
from api.views.org import DepartmentViewSet, ProjectViewSet
from api.views.overview import OverviewView
from api.views.queues import QueueViewSet
from api.views.quotas import QuotaViewSet
from api.views.simulations import SimulationViewSet
from api.views.usage import UsageView
from api.views.workloads import WorkloadViewSet

app_name = "api"

router = SimpleRouter()
router.register("departments", DepartmentViewSet, basename="department")
router.register("projects", ProjectViewSet, basename="project")
router.register("pools", PoolViewSet, basename="pool")
router.register("nodes", NodeViewSet, basename="node")
router.register("quotas", QuotaViewSet, basename="quota")
router.register("workloads", WorkloadViewSet, basename="workload")
router.register("queues", QueueViewSet, basename="queue")
router.register("events", EventViewSet, basename="event")
router.register("simulations", SimulationViewSet, basename="simulation")
router.register("tokens", TokenViewSet, basename="token")

v1 = [
    path("overview/", OverviewView.as_view(), name="overview"),
    path("me/", MeView.as_view(), name="me"),
    path("usage/", UsageView.as_view(), name="usage"),
    path("agents/register/", AgentRegisterView.as_view(), name="agent-register"),
    *router.urls,
]

urlpatterns = [
    path("v1/", include(v1)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "docs/",
        local_assets_only(SpectacularSwaggerView.as_view(url_name="api:schema")),
        name="docs",
    ),
    path(
        "redoc/",
        local_assets_only(
            SpectacularRedocView.as_view(url_name="api:schema", template_name="api/redoc.html")
        ),
        name="redoc",
    ),
    re_path(r"^[\s\S]*$", not_found_view),  # any path, newlines included
]
