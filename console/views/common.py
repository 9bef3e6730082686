"""Small helpers every console view uses."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import render

from scheduler_core.choices import EventType
from scheduler_core.models import NodePool, Project


def is_htmx(request: HttpRequest) -> bool:
    """A fetch from htmx or live.js (swap a fragment) rather than a page load."""
    return request.headers.get("HX-Request") == "true"


def page(request: HttpRequest, template: str, key: str, context: dict | None = None):
    """Render a full page with `key` highlighted in the navigation."""
    return render(request, template, {"page": key, **(context or {})})


def live_names(user) -> dict:
    """Names the live event feed needs to print ids (projects the user may see, pools)."""
    return {
        "projects": dict(Project.objects.visible_to(user).values_list("pk", "name")),
        "pools": dict(NodePool.objects.values_list("pk", "name")),
        "types": {value: label for value, label in EventType.choices},
    }
