"""Quotas (admins): each department's and project's deserved GPUs and limit per pool, edited
inline with validation, and a "what would change" what-if run before saving. Rank and
over-quota weight are not per pool: they are shown here and edited on the owner's own page.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Sum
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.forms import QuotaRowForm, through_service
from console.permissions import admin_required
from console.templatetags.console_ui import gpu_count
from console.views.common import is_htmx, page
from console.views.org import owner_or_404
from console.views.simulations import result_context
from scheduler_core.models import Node, NodePool
from scheduler_core.selectors.quota_table import PoolQuotaTable, QuotaRow, quota_row, quota_table
from scheduler_core.services import quotas
from scheduler_core.services.simulations import simulation_create

WHATIF_HORIZON = 3600


def _gpus_by_pool() -> dict[int, int]:
    return dict(
        Node.objects.values("pool_id").annotate(g=Sum("gpu_count")).values_list("pool_id", "g")
    )


def _rows(tables: list[PoolQuotaTable]) -> list[QuotaRow]:
    return [
        row
        for table in tables
        for block in table.departments
        for row in [block.row, *block.projects]
    ]


def bar_scale(tables: list[PoolQuotaTable]) -> float:
    """The largest figure the bars draw (held, deserved, fairshare): every row's bar is on
    this one scale, so bars compare across rows and pools."""
    figures = [
        figure
        for row in _rows(tables)
        for figure in (row.allocated_gpus, row.gpus, row.fairshare_gpus)
    ]
    return max(figures, default=0.0) or 1.0


@admin_required
def quota_page(request):
    tables = quota_table(user=request.user, gpus_by_pool=_gpus_by_pool())
    forms = {row.key: _initial_form(row) for row in _rows(tables)}
    return page(
        request,
        "console/quotas.html",
        "quotas",
        {"tables": tables, "forms": forms, "scale": bar_scale(tables)},
    )


def _initial_form(row: QuotaRow) -> QuotaRowForm:
    return QuotaRowForm(prefix=row.key, initial={"gpus": row.gpus, "limit_gpus": row.limit_gpus})


def _row(request, kind: str, owner_id: int, pool_id: int) -> QuotaRow:
    """The row being edited, if the user administers its owner (404 otherwise)."""
    pool = get_object_or_404(NodePool, pk=pool_id)
    owner = owner_or_404(request.user, kind, owner_id)
    if not owner.managed_by(request.user):
        raise Http404
    return quota_row(user=request.user, owner=owner, pool=pool)


def _render_row(request, row: QuotaRow, form: QuotaRowForm, saved: bool = False):
    scale = bar_scale(quota_table(user=request.user))
    return render(
        request,
        "console/partials/_quota_row.html",
        {"row": row, "form": form, "saved": saved, "scale": scale},
    )


@admin_required
@require_POST
def quota_save(request, kind: str, owner_id: int, pool_id: int):
    row = _row(request, kind, owner_id, pool_id)
    form = QuotaRowForm(request.POST, prefix=row.key)
    quota = through_service(
        form, quotas.queue_owner_set_quota, user=request.user, owner=row.owner, pool=row.pool
    )
    saved = quota is not None
    if saved:
        row = _row(request, kind, owner_id, pool_id)
        form = _initial_form(row)
    if is_htmx(request):
        return _render_row(request, row, form, saved=saved)
    if saved:
        messages.success(request, f"Saved {row.owner.name} in {row.pool.name}.")
    else:
        for field, errors in form.errors.items():
            messages.error(request, f"{row.owner.name}: {field}: {' '.join(map(str, errors))}")
    return redirect("console:quotas")


def whatif_changes(row: QuotaRow, data: dict) -> dict:
    """The `changes` of a live what-if run for one edited row."""
    quota = {row.kind: row.owner.name, "pool": row.pool.name}
    return {"quotas": [{**quota, "gpus": data["gpus"], "limit_gpus": data["limit_gpus"]}]}


def describe(row: QuotaRow, data: dict) -> str:
    limit = "no limit" if data["limit_gpus"] is None else f"limit {data['limit_gpus']:g}"
    return f"{row.owner.name}: {gpu_count(data['gpus'])} ({limit}) in {row.pool.name}"


@admin_required
@require_POST
def quota_whatif(request, kind: str, owner_id: int, pool_id: int):
    """Start a what-if run of the row's edited values; the panel follows its progress."""
    row = _row(request, kind, owner_id, pool_id)
    form = QuotaRowForm(request.POST, prefix=row.key)
    simulation = None
    error = None
    if form.is_valid():
        try:
            simulation = simulation_create(
                user=request.user,
                name=f"What if {describe(row, form.cleaned_data)}"[:120],
                source="live",
                changes=whatif_changes(row, form.cleaned_data),
                horizon=WHATIF_HORIZON,
            )
        except ValidationError as exc:
            error = " ".join(exc.messages)
    else:
        error = "Fix the values in the row first: " + "; ".join(
            f"{field}: {' '.join(map(str, errs))}" for field, errs in form.errors.items()
        )
    if not is_htmx(request):
        if simulation is not None:
            return redirect("console:simulation_detail", pk=simulation.pk)
        messages.error(request, error or "Could not start the what-if run.")
        return redirect("console:quotas")
    context = result_context(request.user, simulation) if simulation is not None else {}
    return render(request, "console/partials/_whatif.html", {**context, "error": error, "row": row})
