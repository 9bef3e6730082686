"""Quotas (admins): each department's and project's deserved GPUs and limit per pool, edited
inline with validation, and a what-if panel below the edited row: what saving it would
do now to running and waiting work (preempt, move, shrink, grow, start), and the fair
shares it moves. Rank and
over-quota weight are not per pool: they are shown here and edited on the owner's own page.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Sum
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.forms import QuotaRowForm, through_service
from console.permissions import admin_required
from console.views.common import is_htmx, page
from console.views.org import owner_or_404
from scheduler_core.models import Node, NodePool
from scheduler_core.selectors.quota_table import PoolQuotaTable, QuotaRow, quota_row, quota_table
from scheduler_core.services import quotas
from scheduler_core.whatif.immediate import quota_change_effect


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


@admin_required
def quota_now(request):
    """What each row's queue holds and its fair share now, as elements the page swaps in by
    id (live.js `data-live-by-id`), so the figures stay live while a row is being edited."""
    tables = quota_table(user=request.user, gpus_by_pool=_gpus_by_pool())
    return render(
        request,
        "console/partials/_quota_now_all.html",
        {"rows": _rows(tables), "scale": bar_scale(tables)},
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


def _effect_context(request, row: QuotaRow, form: QuotaRowForm) -> dict:
    """The what-if panel of `row`: what saving the form's values would do now."""
    if not form.is_valid():
        return {
            "error": "Fix the values in the row first: "
            + "; ".join(
                f"{field}: {' '.join(map(str, errs))}" for field, errs in form.errors.items()
            )
        }
    data = form.cleaned_data
    effect = quota_change_effect(
        user=request.user,
        kind=row.kind,
        owner_id=row.owner.pk,
        pool=row.pool.name,
        gpus=data["gpus"],
        limit_gpus=data["limit_gpus"],
    )
    return {"effect": effect, "gpus": data["gpus"], "limit_gpus": data["limit_gpus"]}


@admin_required
@require_POST
def quota_whatif(request, kind: str, owner_id: int, pool_id: int):
    """What saving the row's edited values would do now: the scheduler's next cycles on a
    copy of the live cluster with the change (nothing is saved), shown right below the row."""
    row = _row(request, kind, owner_id, pool_id)
    form = QuotaRowForm(request.POST, prefix=row.key)
    panel = {"row": row, **_effect_context(request, row, form)}
    if is_htmx(request):
        return render(request, "console/partials/_whatif.html", {"row": row, "whatif": panel})
    tables = quota_table(user=request.user, gpus_by_pool=_gpus_by_pool())
    forms = {r.key: _initial_form(r) for r in _rows(tables)} | {row.key: form}
    return page(
        request,
        "console/quotas.html",
        "quotas",
        {"tables": tables, "forms": forms, "scale": bar_scale(tables), "whatif": panel},
    )
