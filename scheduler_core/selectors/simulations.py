"""What-if run reads: who may see which simulation, and its result as that user may see it.

A simulation is seen by its creator and by system admins. A copy of the live cluster names
real projects, so its result is shown to a department admin with the projects they may not
see folded into one "(other projects)" row, and its scenario without those projects (the
one access rule, applied to results and scenarios too).
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet

from scheduler_core import access
from scheduler_core.choices import SimulationSource
from scheduler_core.models import Project, Simulation
from scheduler_core.whatif.compare import OTHER_PROJECTS, redact_projects, redact_scenario
from scheduler_core.whatif.replay import figures_document

SIMULATION_INPUTS = ("scenario_text", "trace_text")
"""What a run replays: a scenario or a trace may take megabytes, so the pages and lists
that show neither leave them out (QuerySet.defer)."""


def simulation_rows_visible_to(user) -> QuerySet[Simulation]:
    """simulations_visible_to without the inputs and results a list of runs never shows."""
    return simulations_visible_to(user).defer("result", *SIMULATION_INPUTS)


def simulations_visible_to(user) -> QuerySet[Simulation]:
    """Simulations `user` may see: their own; every one for system admins; newest first."""
    qs = Simulation.objects.select_related("created_by").order_by("-created_at", "-id")
    if access.is_system_admin(user):
        return qs
    if not access.is_authenticated(user):
        return qs.none()
    return qs.filter(created_by=user)


def _visible_projects(simulation: Simulation, user) -> set[str] | None:
    """The projects `user` may see, where a run copied from the live cluster shows more
    (None: `user` may see all of it)."""
    if simulation.source != SimulationSource.LIVE or access.is_system_admin(user):
        return None
    return set(Project.objects.visible_to(user).values_list("name", flat=True))


def simulation_result_for(*, simulation: Simulation, user) -> dict[str, Any] | None:
    """`simulation.result` with projects `user` may not see merged into OTHER_PROJECTS."""
    result = simulation.result
    visible = _visible_projects(simulation, user) if result is not None else None
    if result is None or visible is None:
        return result
    return redact_projects(result, visible=visible, other=OTHER_PROJECTS)


def simulation_figures_of(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """A succeeded trace run's figures side by side, as `replay_trace` prints them (None
    for another run, or one without a result yet)."""
    if not result or result.get("kind") != "trace" or not result.get("runs"):
        return None
    return figures_document(result["runs"])


def simulation_scenario_for(*, simulation: Simulation, user) -> str:
    """The scenario text the run replays, without the projects `user` may not see (a live
    copy is stored as JSON, and shown as JSON)."""
    visible = _visible_projects(simulation, user)
    if visible is None:
        return simulation.scenario_text
    scenario = redact_scenario(json.loads(simulation.scenario_text), visible=visible)
    return json.dumps(scenario, indent=1)
