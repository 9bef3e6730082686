"""Nodes as a list (beside the GPU map): filters by pool and state, GPUs allocated of
total, CPU and memory held, the workload on each GPU in words, and cordon / drain /
uncordon in place (htmx swaps the row; draining asks first)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from console.views.common import is_htmx, page
from scheduler_core import access
from scheduler_core.choices import NodeState
from scheduler_core.models import Node, NodePool
from scheduler_core.selectors.node_rows import node_rows
from scheduler_core.services import cluster as cluster_services

ACTIONS = {
    "cordon": (cluster_services.node_cordon, "{name} is cordoned: no new pods land on it."),
    "uncordon": (cluster_services.node_uncordon, "{name} takes pods again."),
    "drain": (cluster_services.node_drain, "{name} is drained: its workloads were re-queued."),
}


class NodeFilterForm(forms.Form):
    pool = forms.ModelChoiceField(
        queryset=NodePool.objects.order_by("name"), required=False, empty_label="All pools"
    )
    state = forms.ChoiceField(required=False, choices=[("", "Any state"), *NodeState.choices])


def _context(request) -> dict:
    form = NodeFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    return {
        "form": form,
        "rows": node_rows(user=request.user, pool=data.get("pool"), state=data.get("state") or ""),
        "can_manage": access.is_system_admin(request.user),
    }


@login_required
def node_list(request):
    context = _context(request)
    if is_htmx(request) and request.GET.get("fragment") == "rows":
        return render(request, "console/nodes/_list_rows.html", context)
    return page(request, "console/nodes/list.html", "nodes", context)


@login_required
@require_POST
def node_list_action(request, pk: int, action: str):
    """Cordon, drain or uncordon one node; answers its row, redrawn, with what happened."""
    if not access.is_system_admin(request.user):
        raise PermissionDenied("this action is for system admins")
    node = get_object_or_404(Node.objects.visible_to(request.user), pk=pk)
    if action not in ACTIONS:
        return HttpResponse("Unknown action.", status=400)
    service, message = ACTIONS[action]
    service(user=request.user, node=node)
    rows = node_rows(user=request.user, pool=node.pool)
    row = next(r for r in rows if r.node.pk == node.pk)
    return render(
        request,
        "console/nodes/_list_row.html",
        {"r": row, "can_manage": True, "done": message.format(name=node.name)},
    )
