"""GPU usage over time (docs/usage.md): GPUs held against GPUs used and GPU memory, for the
cluster or a pool, project, node or workload, over 1 h, 24 h or 7 d, with the workloads that
left the most held GPU-hours idle. The Usage page chooses a pool and a project; the
workload, node, pool and project pages load the same panel (`usage_panel`)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone

from console.charts import Line, time_chart
from console.views.common import page
from scheduler_core.models import Node, NodePool, Project, Workload
from scheduler_core.selectors.gpu_usage import (
    DEFAULT_WINDOW,
    SCOPE_FIELDS,
    WINDOWS,
    UsageHistory,
    UsagePoint,
    UsageScope,
    Window,
    gpu_usage_history,
)

HELD, USED = "var(--p1)", "var(--p3)"
MEMORY_TOTAL, MEMORY_USED = "var(--p6)", "var(--p4)"


def _visible(user, name: str):
    """Where a scope parameter's object is looked for: what `user` may see."""
    return {
        "pool": NodePool.objects.all(),
        "project": Project.objects.visible_to(user),
        "node": Node.objects.visible_to(user),
        "workload": Workload.objects.visible_to(user),
    }[name]


def usage_scope(request: HttpRequest) -> UsageScope:
    """The scope named by the query (?pool=ID&project=ID...); 404 for what the user may not see."""
    found = {}
    for name in SCOPE_FIELDS:
        value = request.GET.get(name, "")
        if not value:
            continue
        if not value.isdigit():
            raise Http404(f"no {name} {value!r}")
        found[name] = get_object_or_404(_visible(request.user, name), pk=int(value))
    return UsageScope(**found)


def _window(request: HttpRequest) -> Window:
    return WINDOWS.get(request.GET.get("window", ""), WINDOWS[DEFAULT_WINDOW])


def _hover(point: UsagePoint, label: str) -> str:
    busy = "" if point.utilization is None else f" ({point.utilization:.0f} %)"
    return (
        f"{label} · held {point.held_gpus:.2f} GPUs · used {point.used_gpus:.2f} GPUs{busy}"
        f" · memory {point.memory_used_mib / 1024:.1f} / {point.memory_total_mib / 1024:.1f} GiB"
    )


def _labels(history: UsageHistory) -> list[str]:
    shape = "%a %H:%M" if history.window.span.days >= 2 else "%H:%M"
    return [timezone.localtime(p.start).strftime(shape) for p in history.points]


def usage_charts(history: UsageHistory) -> dict:
    """The GPU chart (held against used) and the memory chart, with hover values."""
    points = history.points
    labels = _labels(history)
    hover = [_hover(p, label) for p, label in zip(points, labels, strict=True)]
    gpus = time_chart(
        labels,
        [
            Line("held (allocated)", HELD, [p.held_gpus for p in points]),
            Line("used (busy)", USED, [p.used_gpus for p in points]),
        ],
        hover,
        unit="GPUs",
        described=f"GPUs held against GPUs used over the last {history.window.label}",
    )
    memory = time_chart(
        labels,
        [
            Line("memory of the GPUs", MEMORY_TOTAL, [p.memory_total_mib / 1024 for p in points]),
            Line("memory used", MEMORY_USED, [p.memory_used_mib / 1024 for p in points]),
        ],
        hover,
        unit="GiB",
        described=f"GPU memory used over the last {history.window.label}",
        height=160,
    )
    return {"gpu_chart": gpus, "memory_chart": memory}


def _window_links(request: HttpRequest, scope: UsageScope, current: Window) -> list[dict]:
    query = {name: getattr(scope, name).pk for name in SCOPE_FIELDS if getattr(scope, name)}
    base = reverse("console:usage_panel")
    return [
        {
            "key": w.key,
            "label": w.key,
            "current": w.key == current.key,
            "url": f"{base}?{urlencode({**query, 'window': w.key})}",
        }
        for w in WINDOWS.values()
    ]


def usage_context(request: HttpRequest) -> dict:
    """What the usage panel shows for the request's scope and window."""
    scope = usage_scope(request)
    window = _window(request)
    history = gpu_usage_history(user=request.user, scope=scope, window=window, now=timezone.now())
    return {
        "scope": scope,
        "history": history,
        "window": window,
        "windows": _window_links(request, scope, window),
        "has_data": any(p.held_gpus or p.memory_total_mib for p in history.points),
        "show_holders": scope.workload is None,
        **usage_charts(history),
    }


@login_required
def usage(request: HttpRequest):
    """The Usage page: the cluster, a pool or a project (each as the user may see it)."""
    context = usage_context(request)
    context["pools"] = NodePool.objects.order_by("name")
    context["projects"] = Project.objects.visible_to(request.user).order_by("name")
    return page(request, "console/usage.html", "usage", context)


@login_required
def usage_panel(request: HttpRequest):
    """The usage panel alone (loaded by the workload, node, pool and project pages)."""
    return render(request, "console/partials/_usage_panel.html", usage_context(request))
