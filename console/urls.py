"""Console routes."""

from django.urls import path

from console.views import (
    auth,
    events,
    nodes,
    overview,
    queue,
    quotas,
    simulations,
    submit,
    tokens,
    workloads,
)

app_name = "console"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("live/overview/", overview.overview_live, name="overview_live"),
    path("login/", auth.login, name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("queue/", queue.queue, name="queue"),
    path("live/queue/", queue.queue_live, name="queue_live"),
    path("workloads/", workloads.workload_list, name="workloads"),
    path("workloads/rows/<int:pk>/", workloads.workload_row, name="workload_row"),
    path("workloads/<int:pk>/", workloads.workload_detail, name="workload_detail"),
    path("workloads/<int:pk>/live/", workloads.workload_detail_live, name="workload_detail_live"),
    path("workloads/<int:pk>/cancel/", workloads.workload_cancel, name="workload_cancel"),
    path("workloads/<int:pk>/suspend/", workloads.workload_suspend, name="workload_suspend"),
    path("workloads/<int:pk>/resume/", workloads.workload_resume, name="workload_resume"),
    path("workloads/<int:pk>/priority/", workloads.workload_priority, name="workload_priority"),
    path("submit/", submit.submit, name="submit"),
    path("submit/preview/", submit.submit_preview, name="submit_preview"),
    path("quotas/", quotas.quota_page, name="quotas"),
    path(
        "quotas/<str:kind>/<int:owner_id>/<int:pool_id>/",
        quotas.quota_save,
        name="quota_save",
    ),
    path(
        "quotas/<str:kind>/<int:owner_id>/<int:pool_id>/what-if/",
        quotas.quota_whatif,
        name="quota_whatif",
    ),
    path("nodes/", nodes.nodes, name="nodes"),
    path("live/nodes/", nodes.nodes_live, name="nodes_live"),
    path("nodes/<int:pk>/<str:action>/", nodes.node_action, name="node_action"),
    path("events/", events.events, name="events"),
    path("simulations/", simulations.simulation_list, name="simulations"),
    path("simulations/compare/", simulations.simulation_compare, name="simulation_compare"),
    path("simulations/<int:pk>/", simulations.simulation_detail, name="simulation_detail"),
    path("simulations/<int:pk>/status/", simulations.simulation_status, name="simulation_status"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", tokens.token_revoke_view, name="token_revoke"),
]
