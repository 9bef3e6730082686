"""The navigation bar, shaped by the user's role (a context processor)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from scheduler_core import access
from scheduler_core.selectors.submittable import submittable_projects


@dataclass(frozen=True)
class NavItem:
    key: str
    label: str
    url: str


def navigation(request) -> dict:
    """Nav items a user may use, their role label and capabilities for templates."""
    user = getattr(request, "user", None)
    if not access.is_authenticated(user):
        return {}
    is_admin = access.is_any_admin(user)
    is_system_admin = access.is_system_admin(user)
    can_submit = is_admin or submittable_projects(user=user).exists()
    items = [
        NavItem("overview", "Overview", reverse("console:overview")),
        NavItem("queue", "Queue", reverse("console:queue")),
        NavItem("workloads", "Workloads", reverse("console:workloads")),
    ]
    if can_submit:
        items.append(NavItem("submit", "Submit", reverse("console:submit")))
    items.append(NavItem("nodes", "Nodes", reverse("console:nodes")))
    items.append(NavItem("pools", "Pools", reverse("console:pools")))
    items.append(NavItem("org", "Organisation", reverse("console:org")))
    items.append(NavItem("usage", "Usage", reverse("console:usage")))
    items.append(NavItem("events", "Events", reverse("console:events")))
    if is_admin:
        items.append(NavItem("quotas", "Quotas", reverse("console:quotas")))
        items.append(NavItem("simulations", "Simulations", reverse("console:simulations")))
    if is_system_admin:
        # The Django admin: for what the console does not edit (users, tokens, raw rows).
        items.append(NavItem("admin", "Django admin", reverse("admin:index")))
    return {
        "nav_items": items,
        "role_label": access.user_role_label(user),
        "is_any_admin": is_admin,
        "is_system_admin": is_system_admin,
        "can_submit": can_submit,
    }
