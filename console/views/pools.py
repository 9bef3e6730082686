"""Node pools and their nodes: every signed-in user reads them; system admins create pools,
change their scheduling settings, add nodes, cordon, drain and delete them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from console.forms import (
    JoinTokenForm,
    NodeCreateForm,
    PoolCreateForm,
    PoolSettingsForm,
    through_service,
)
from console.permissions import system_admin_required
from console.views.common import page
from console.views.confirm import confirm_delete, plural
from console.views.nodes import ACTIONS
from scheduler_core import access
from scheduler_core.choices import TERMINAL_STATES
from scheduler_core.models import (
    Allocation,
    JoinToken,
    Node,
    NodePool,
    Quota,
    WorkloadCandidatePool,
)
from scheduler_core.selectors.agents import join_tokens_of
from scheduler_core.selectors.nodes import pool_list
from scheduler_core.services import agents, cluster, removal

JOIN_TOKENS_SHOWN = 20


def _pools_page(request, *, form=None):
    context: dict[str, Any] = {"pools": pool_list(user=request.user).order_by("name")}
    if access.is_system_admin(request.user):
        context["form"] = form or PoolCreateForm()
    return page(request, "console/pools/list.html", "pools", context)


@login_required
def pools(request):
    return _pools_page(request)


@system_admin_required
@require_POST
def pool_create(request):
    form = PoolCreateForm(request.POST)
    pool = through_service(form, cluster.pool_create, user=request.user)
    if pool is None:
        return _pools_page(request, form=form)
    messages.success(request, f"Created pool {pool.name}; add its nodes below.")
    return redirect("console:pool_detail", pk=pool.pk)


def _pool_page(request, pool: NodePool, *, settings_form=None, node_form=None, **extra: Any):
    nodes = Node.objects.filter(pool=pool).annotate(pod_count=Count("allocations"))
    context: dict[str, Any] = {
        "pool": pool,
        "nodes": nodes.order_by("name"),
        "profile_changes": PoolSettingsForm.profile_changes(pool),
        **extra,
    }
    if access.is_system_admin(request.user):
        context["settings_form"] = settings_form or PoolSettingsForm(
            initial=PoolSettingsForm.initial_of(pool)
        )
        context["node_form"] = node_form or NodeCreateForm()
        context.setdefault("join_token_form", JoinTokenForm())
        tokens = list(join_tokens_of(pool)[:JOIN_TOKENS_SHOWN])
        for token in tokens:
            token.state = agents.join_token_state(token)  # type: ignore[attr-defined]
        context["join_tokens"] = tokens
    return page(request, "console/pools/detail.html", "pools", context)


def _pool_or_404(request, pk: int) -> NodePool:
    """The pool, with its node and GPU counts."""
    return get_object_or_404(pool_list(user=request.user), pk=pk)


@login_required
def pool_detail(request, pk: int):
    return _pool_page(request, _pool_or_404(request, pk))


@system_admin_required
@require_POST
def pool_settings(request, pk: int):
    pool = _pool_or_404(request, pk)
    form = PoolSettingsForm(request.POST)
    if through_service(form, cluster.pool_update, user=request.user, pool=pool) is None:
        return _pool_page(request, pool, settings_form=form)
    messages.success(request, f"Saved the settings of pool {pool.name}.")
    return redirect("console:pool_detail", pk=pool.pk)


@system_admin_required
@require_POST
def node_create(request, pk: int):
    pool = _pool_or_404(request, pk)
    form = NodeCreateForm(request.POST)
    node = through_service(form, cluster.node_create, user=request.user, pool=pool)
    if node is None:
        return _pool_page(request, pool, node_form=form)
    messages.success(request, f"Added node {node.name} to {pool.name}.")
    return redirect("console:pool_detail", pk=pool.pk)


@system_admin_required
@require_POST
def join_token_create(request, pk: int):
    """A join token for the pool's node agents: shown once, on the page this answers with."""
    pool = _pool_or_404(request, pk)
    form = JoinTokenForm(request.POST)
    if not form.is_valid():
        return _pool_page(request, pool, join_token_form=form)
    expires_in = form.cleaned_data["expires_in"]
    _, raw = agents.join_token_create(
        pool=pool,
        by=request.user,
        description=form.cleaned_data["description"],
        expires_at=timezone.now() + timedelta(seconds=expires_in) if expires_in else None,
        single_use=form.cleaned_data["single_use"],
    )
    command = agents.agent_command_line(server=request.build_absolute_uri("/"), join_token=raw)
    return _pool_page(request, pool, new_join_token=raw, agent_command=command)


@system_admin_required
@require_POST
def join_token_revoke(request, pk: int):
    token = get_object_or_404(JoinToken, pk=pk)
    agents.join_token_revoke(token=token, by=request.user)
    messages.success(request, f"Revoked join token {token.prefix}…; nodes it registered stay.")
    return redirect("console:pool_detail", pk=token.pool_id)


@system_admin_required
@require_POST
def pool_node_action(request, pk: int, action: str):
    """Cordon, uncordon or drain a node from its pool's page, and come back to it."""
    node = get_object_or_404(Node, pk=pk)
    if action in ACTIONS:
        service, message = ACTIONS[action]
        service(user=request.user, node=node)
        messages.success(request, message.format(name=node.name))
    return redirect("console:pool_detail", pk=node.pool_id)


@system_admin_required
def pool_delete(request, pk: int):
    pool = get_object_or_404(NodePool, pk=pk)
    nodes = Node.objects.filter(pool=pool).count()
    waiting = (
        WorkloadCandidatePool.objects.filter(pool=pool)
        .exclude(workload__status__in=TERMINAL_STATES)
        .count()
    )
    effects = [
        f"Every department's and project's quota in {pool.name} "
        f"({plural(Quota.objects.filter(pool=pool).count(), 'quota')}) is deleted with it.",
    ]
    if nodes:
        effects.insert(
            0, f"It still has {plural(nodes, 'node')}: deleting is refused until they are deleted."
        )
    if waiting:
        effects.insert(
            0,
            f"{plural(waiting, 'unfinished workload')} can only run here or list it as a "
            "choice: deleting is refused until they are cancelled or finish.",
        )
    return confirm_delete(
        request,
        what=f"pool {pool.name}",
        effects=effects,
        delete=lambda: removal.pool_delete(user=request.user, pool=pool),
        done_url=reverse("console:pools"),
        cancel_url=reverse("console:pool_detail", args=[pool.pk]),
        page_key="pools",
    )


@system_admin_required
def node_delete(request, pk: int):
    node = get_object_or_404(Node.objects.select_related("pool"), pk=pk)
    pods = Allocation.objects.filter(node=node).count()
    effects = [f"{plural(node.gpu_count, 'GPU')} leave pool {node.pool.name}; its events stay."]
    if pods:
        effects.insert(
            0,
            f"It still runs {plural(pods, 'pod')}: deleting is refused until it is "
            "drained (its workloads are then re-queued elsewhere).",
        )
    return confirm_delete(
        request,
        what=f"node {node.name}",
        effects=effects,
        delete=lambda: removal.node_delete(user=request.user, node=node),
        done_url=reverse("console:pool_detail", args=[node.pool_id]),
        cancel_url=reverse("console:pool_detail", args=[node.pool_id]),
        page_key="pools",
    )
