"""Nodes: a GPU map per pool (each device a cell coloured by project, fractions shown, its
latest utilisation, idle allocated devices marked), one node's page (its agent, devices and
runs), node states, and cordon / drain / uncordon for system admins."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.permissions import system_admin_required
from console.views.common import page
from scheduler_core.models import Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES
from scheduler_core.selectors.agents import IDLE_UTILIZATION
from scheduler_core.selectors.gpu_map import gpu_map, with_usage
from scheduler_core.services import agents as agent_services
from scheduler_core.services import cluster as cluster_services

ACTIONS = {
    "cordon": (cluster_services.node_cordon, "{name} is cordoned: no new pods land on it."),
    "uncordon": (cluster_services.node_uncordon, "{name} takes pods again."),
    "drain": (cluster_services.node_drain, "{name} is drained: its workloads were re-queued."),
    "revoke-credential": (
        lambda *, user, node: agent_services.node_credential_revoke(node=node, by=user),
        "{name}'s agent credential is revoked: its agent is disconnected until it registers again.",
    ),
}


def _context(request) -> dict:
    pools = with_usage(gpu_map(user=request.user))
    legend: dict[int, str] = {}
    for pool in pools:
        for node in pool.nodes:
            for device in node.devices:
                for s in device.slices:
                    if s.project_id is not None:
                        legend[s.project_id] = s.project_name
    return {
        "pools": pools,
        "legend": sorted(legend.items(), key=lambda kv: kv[1]),
        "idle_below": IDLE_UTILIZATION,
    }


@login_required
def nodes(request):
    return page(request, "console/nodes.html", "nodes", _context(request))


@login_required
def nodes_live(request):
    return render(request, "console/partials/_nodes_live.html", _context(request))


def _node_context(request, pk: int) -> dict:
    node = get_object_or_404(Node.objects.visible_to(request.user).select_related("pool"), pk=pk)
    node_map = with_usage(gpu_map(user=request.user, only=node))[0].nodes[0]
    found = {d.get("index"): d for d in node.devices or [] if isinstance(d, dict)}
    runs = (
        PodRun.objects.filter(node=node, state__in=LIVE_RUN_STATES)
        .filter(workload__in=Workload.objects.visible_to(request.user))
        .select_related("workload")
        .order_by("workload__name", "group", "pod_index")
    )
    return {
        "n": node_map,
        "node": node_map.node,
        "devices": [(d, found.get(d.index, {})) for d in node_map.devices],
        "runs": list(runs),
        "idle_below": IDLE_UTILIZATION,
    }


@login_required
def node_detail(request, pk: int):
    return page(request, "console/node_detail.html", "nodes", _node_context(request, pk))


@login_required
def node_detail_live(request, pk: int):
    return render(request, "console/partials/_node_detail_live.html", _node_context(request, pk))


@system_admin_required
@require_POST
def node_action(request, pk: int, action: str):
    node = get_object_or_404(Node.objects.visible_to(request.user), pk=pk)
    if action not in ACTIONS:
        return redirect("console:nodes")
    service, message = ACTIONS[action]
    service(user=request.user, node=node)
    messages.success(request, message.format(name=node.name))
    if action == "revoke-credential":
        return redirect("console:node_detail", pk=node.pk)
    return redirect("console:nodes")
