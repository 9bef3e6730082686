"""What-if run reads: who may see which simulation, and its result as that user may see it.

A simulation is seen by its creator and by system admins. A copy of the live cluster names
real projects, so its result is shown to a department admin with the projects they may not
see folded into one "(other projects)" row (the one access rule, applied to results too).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from scheduler_core import access
from scheduler_core.choices import SimulationSource
from scheduler_core.models import Project, Simulation
from scheduler_core.whatif.compare import OTHER_PROJECTS, redact_projects


def simulations_visible_to(user) -> QuerySet[Simulation]:
    """Simulations `user` may see: their own; every one for system admins; newest first."""
    qs = Simulation.objects.select_related("created_by").order_by("-created_at", "-id")
    if access.is_system_admin(user):
        return qs
    if not access.is_authenticated(user):
        return qs.none()
    return qs.filter(created_by=user)


def simulation_result_for(*, simulation: Simulation, user) -> dict[str, Any] | None:
    """`simulation.result` with projects `user` may not see merged into OTHER_PROJECTS."""
    result = simulation.result
    if result is None or simulation.source != SimulationSource.LIVE:
        return result
    if access.is_system_admin(user):
        return result
    visible = set(Project.objects.visible_to(user).values_list("name", flat=True))
    return redact_projects(result, visible=visible, other=OTHER_PROJECTS)
