"""Simulations (admins): upload a scenario or copy the live cluster with changes, watch
progress live, and compare results side by side."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render

from console.charts import Series, stacked_area
from console.forms import attach_service_errors
from console.permissions import admin_required
from console.simulation_forms import (
    ROW_FIELDS,
    TRACE_FIELDS,
    BaseChangeRows,
    SimulationForm,
    attach_change_errors,
    change_rows,
)
from console.simulation_summary import gpu_moves_text, result_text
from console.trace_results import trace_comparison, trace_context, trace_options_text
from console.views.common import page
from scheduler_core.choices import SimulationSource
from scheduler_core.models import Simulation
from scheduler_core.selectors.simulations import (
    SIMULATION_INPUTS,
    simulation_result_for,
    simulation_rows_visible_to,
    simulations_visible_to,
)
from scheduler_core.services.simulations import simulation_create

LIST_SIZE = 50
COLOURS = [f"var(--p{i})" for i in range(10)]


def _visible(request, pk: int) -> Simulation:
    return get_object_or_404(simulations_visible_to(request.user).defer(*SIMULATION_INPUTS), pk=pk)


@admin_required
def simulation_list(request):
    """The runs (their status live, new ones added live) and the form of a new run."""
    if request.method != "POST":
        after = request.GET.get("new_after")
        if after is not None:  # the list's live region: runs newer than those drawn
            return _new_rows(request, int(after) if after.isdigit() else 0)
        return _list_page(request, SimulationForm(), change_rows(request.user))
    add_row = "add_row" in request.POST
    rows = change_rows(request.user, request.POST, add_row=add_row)
    if add_row:  # "Add a change" without JavaScript: the same form, one row more
        form = SimulationForm(initial={k: request.POST.get(k) for k in SimulationForm.base_fields})
        return _list_page(request, form, rows)
    form = SimulationForm(request.POST, request.FILES, owner=request.user.pk)
    simulation = _start(request, form, rows)
    if simulation is not None:
        messages.success(request, f"{simulation.name} is queued.")
        return redirect("console:simulation_detail", pk=simulation.pk)
    return _list_page(request, form, rows)


def _start(request, form: SimulationForm, rows: BaseChangeRows) -> Simulation | None:
    """Start the run the form describes, or leave the errors on the form and its rows."""
    rows_ok = not rows.is_bound or rows.is_valid()
    if not (form.is_valid() and rows_ok):
        return None
    data = form.cleaned_data
    chosen, row_of = rows.changes() if rows.is_bound else ({}, {})
    if chosen and data.get("changes_dict"):
        form.add_error("changes", "give the changes in the rows or as JSON, not both")
        return None
    try:
        return simulation_create(
            user=request.user,
            name=data["name"],
            source=data["source"],
            scenario_text=data.get("scenario_text") or "",
            changes=chosen or data.get("changes_dict"),
            horizon=data["horizon"],
            trace_text=data.get("trace_text") or "",
            trace=data.get("trace_options"),
        )
    except ValidationError as exc:
        if not hasattr(exc, "error_dict"):
            attach_service_errors(form, exc)
            return None
        rest = attach_change_errors(row_of, exc) if chosen else exc.message_dict.items()
        for key, messages_ in rest:
            if chosen and key.startswith("changes"):
                for message in messages_:
                    form.add_error(None, f"{key.removeprefix('changes.')}: {message}")
            else:
                attach_service_errors(
                    form, ValidationError({key: messages_}), {"changes": "changes", **TRACE_FIELDS}
                )
        return None


def _new_rows(request, after: int):
    """Rows of the runs `request.user` may see that are newer than run `after` (the newest
    the list was drawn with), newest first: re-fetched when a run is created."""
    newer = simulation_rows_visible_to(request.user).filter(pk__gt=after)[:LIST_SIZE]
    return render(
        request, "console/simulations/_new_rows.html", {"new_runs": newer, "after": after}
    )


def _list_page(request, form: SimulationForm, rows: BaseChangeRows):
    simulations = list(simulation_rows_visible_to(request.user)[:LIST_SIZE])
    return page(
        request,
        "console/simulations/list.html",
        "simulations",
        {
            "form": form,
            "rows": rows,
            "row_fields": ROW_FIELDS,
            "simulations": simulations,
            "newest_id": max((s.pk for s in simulations), default=0),
            "advanced_open": bool(
                form.is_bound and (form.data.get("changes") or form.errors.get("changes"))
            ),
        },
    )


def run_chart(run: dict) -> str:
    """The GPUs-per-project timeline of one run, as an SVG."""
    timeline = run.get("timeline") or {}
    at = timeline.get("at") or []
    series = [
        Series(label=name, colour=COLOURS[i % len(COLOURS)], values=values)
        for i, (name, values) in enumerate(sorted((timeline.get("projects") or {}).items()))
    ]
    labels = [f"{int(t // 60)}m" for t in at]
    capacity = (run.get("cluster") or {}).get("capacity_gpus")
    return stacked_area(labels, series, capacity=capacity or None, height=200)


def result_context(user, simulation: Simulation) -> dict:
    """Progress, runs (with charts) and comparison of a run, as `user` may see them."""
    result = simulation_result_for(simulation=simulation, user=user) or {}
    base = {
        "simulation": simulation,
        "result": result,
        "live_running": simulation.status in ("queued", "running"),
    }
    if result.get("kind") == "trace":
        return base | {"runs": [], "trace": trace_context(result)}
    runs = result.get("runs") or {}
    return base | {
        "runs": [
            {
                "label": label,
                "run": run,
                "chart": run_chart(run),
                "projects": sorted((run.get("projects") or {}).items()),
            }
            for label, run in runs.items()
        ],
        "comparison": result.get("comparison"),
        "summary": result_text(result),
    }


@admin_required
def simulation_detail(request, pk: int):
    simulation = _visible(request, pk)
    return page(
        request,
        "console/simulations/detail.html",
        "simulations",
        result_context(request.user, simulation)
        | {"trace_options": trace_options_text(simulation.trace_options)},
    )


@admin_required
def simulation_status(request, pk: int):
    """Progress (and, when done, the outcome) of one run: re-fetched on its progress events."""
    simulation = _visible(request, pk)
    if request.GET.get("row"):  # a row of the runs list: its status and progress only
        return render(request, "console/simulations/_row_status.html", {"s": simulation})
    template = (
        "console/simulations/_whatif_status.html"
        if request.GET.get("compact")
        else "console/simulations/_status.html"
    )
    return render(request, template, result_context(request.user, simulation))


def _mixed(request):
    messages.error(
        request,
        "Compare a trace run with another trace run: its figures are not those of a "
        "scenario or a copy of the live cluster.",
    )
    return redirect("console:simulations")


def _compare_traces(request, chosen: list[Simulation]):
    """Two trace runs: the engine's figures side by side, what changes, each run's chart."""
    sides = [result_context(request.user, s) for s in chosen]
    named = [(s.name, side["result"]) for s, side in zip(chosen, sides, strict=True)]
    return page(
        request,
        "console/simulations/compare_traces.html",
        "simulations",
        {"sides": sides, "comparison": trace_comparison(named)},
    )


@admin_required
def simulation_compare(request):
    """Two runs side by side."""
    visible = simulations_visible_to(request.user).defer(*SIMULATION_INPUTS)
    ids = [v for v in request.GET.getlist("id") if v.isdigit()][:2]
    chosen = list(visible.filter(pk__in=ids))
    if len(chosen) != 2:
        messages.error(request, "Pick two simulations to compare.")
        return redirect("console:simulations")
    chosen.sort(key=lambda s: ids.index(str(s.pk)))
    traces = [s.source == SimulationSource.TRACE for s in chosen]
    if any(traces):
        return _compare_traces(request, chosen) if all(traces) else _mixed(request)
    sides = [result_context(request.user, s) for s in chosen]
    for side in sides:
        # A run with changes is compared by its changed copy; a scenario by its only run.
        side["primary"] = side["runs"][-1] if side["runs"] else None
    primaries = [dict(side["primary"]["projects"]) if side["primary"] else {} for side in sides]
    rows = []
    for name in sorted(set(primaries[0]) | set(primaries[1])):
        a, b = primaries[0].get(name) or {}, primaries[1].get(name) or {}
        rows.append(
            {
                "project": name,
                "a": a,
                "b": b,
                "delta": round((b.get("mean_gpus") or 0) - (a.get("mean_gpus") or 0), 2),
            }
        )
    moves = [
        (r["project"], r["a"].get("mean_gpus") or 0, r["b"].get("mean_gpus") or 0) for r in rows
    ]
    subject = f"In {chosen[1].name}, compared with {chosen[0].name}"
    summary = gpu_moves_text(moves)
    summary = f"{subject}, {summary}." if summary else f"{subject}, no project's mean GPUs move."
    return page(
        request,
        "console/simulations/compare.html",
        "simulations",
        {"sides": sides, "rows": rows, "summary": summary},
    )
