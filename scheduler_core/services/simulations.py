"""What-if runs: create (validated, then queued for a Celery worker), run, and clean up.

Who: system admins, and department admins (their changes to a live copy are limited to
what they could change for real: quotas and weights of their departments' projects).

A live copy is taken when the run is created and stored as its scenario (JSON, which is
YAML too), so the run is reproducible and can be downloaded and replayed with
`manage.py simulate`. Progress goes to Simulation.progress/progress_message and to the
channel group `simulation-<id>` as {"type": "simulation.progress", "group": ...,
"simulation": simulation_state(sim)}, and a new run's id to the group `simulations` (the
runs lists; the console's consumer forwards it only to those who may see the run). A crash
stores status failed with the error; a run that stops answering (worker killed) is marked
failed by `simulation_fail_stale`, which runs when a worker starts, before every run and
every creation, and from the beat task `scheduler_core.whatif.tasks.fail_stale_simulations_task`.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timedelta
from typing import Any

import yaml
from celery import current_app
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from scheduler_core import access
from scheduler_core.choices import SimulationSource, SimulationStatus
from scheduler_core.live_events.recording import group_name, send_after_commit
from scheduler_core.models import Project, Simulation
from scheduler_core.schemas.base import MAX_WHATIF_WORK
from scheduler_core.services.errors import Conflict, FieldErrors
from scheduler_core.whatif.changes import is_empty, validate_changes
from scheduler_core.whatif.compare import OTHER_PROJECTS, redact_projects
from scheduler_core.whatif.export import scenario_from_live_cluster
from scheduler_core.whatif.runner import PREVIEW_STEPS, STEPS_PER_RUN, run_whatif
from scheduler_core.whatif.scenarios.nesting import NestingTooDeep, parse_bounded
from scheduler_core.whatif.trace_runs import (
    TraceRequest,
    check_trace_options,
    check_trace_request,
    run_trace,
)

logger = logging.getLogger(__name__)

SIMULATION_TASK = "scheduler_core.whatif.tasks.run_simulation_task"
"""The task that runs one what-if run (scheduler_core.whatif.tasks), sent by name."""

MIN_HORIZON = 60
MAX_HORIZON = 30 * 24 * 3600
PREVIEW_MAX_HORIZON = 24 * 3600
MAX_SCENARIO_CHARS = 5_000_000
SCENARIO_FILE = "scenario.yaml"
PROGRESS_EVERY_SECONDS = 0.5
PROGRESS_EVERY_FRACTION = 0.05
SIMULATIONS_GROUP = "simulations"
"""Channel group of the runs lists: every new run's id (any admin may join)."""


def _timeout() -> timedelta:
    """How long a run may go on before it is declared lost (settings.SIMULATION_TIMEOUT)."""
    return timedelta(seconds=getattr(settings, "SIMULATION_TIMEOUT", 3600))


def _queued_timeout() -> timedelta:
    """How long a run may wait for a worker (settings.SIMULATION_QUEUED_TIMEOUT)."""
    return timedelta(seconds=getattr(settings, "SIMULATION_QUEUED_TIMEOUT", 6 * 3600))


# --- creating ---------------------------------------------------------------------------


def simulation_create(
    *,
    user,
    name: str,
    source: str,
    scenario_text: str = "",
    changes: dict[str, Any] | None = None,
    horizon: int = 3600,
    trace_text: str = "",
    trace: dict[str, Any] | None = None,
) -> Simulation:
    """Validate and queue a what-if run; the worker starts it once this transaction commits.

    source "scenario": `scenario_text` is a FORMAT.md scenario (YAML or JSON); `changes`
    (optional) are tried against it, compared with the unchanged scenario.
    source "live": a copy of the live cluster now; `changes` (optional, see
    scheduler_core.whatif.changes) are compared with the unchanged copy.
    source "trace": `trace_text` is a job trace (CSV, Philly columns) and `trace` its
    options (window, cluster, pool settings: scheduler_core.whatif.trace_runs), replayed
    through the engine, FIFO and FIFO with backfill until the window's jobs end (its
    `horizon` is set to the window). `horizon`: simulated seconds to replay. Raises
    PermissionDenied (not an admin) or ValidationError keyed by field (`scenario_text`,
    `changes.quotas[0].gpus`, `trace.hours`, ...).
    """
    _require_admin(user)
    name = _checked_run(name, source, horizon)
    if source == SimulationSource.TRACE:
        return _create_trace_run(
            user, name, trace_text, trace, scenario_text=scenario_text, changes=changes
        )
    if (isinstance(trace_text, str) and trace_text.strip()) or trace:
        raise ValidationError({"trace_text": ["a trace goes with source trace"]})
    scenario, scenario_text = _scenario_of(source, scenario_text)
    normalized = validate_changes(changes, scenario=scenario)
    if source == SimulationSource.LIVE:
        _check_change_permissions(user, normalized)
    field = "scenario_text" if source == SimulationSource.SCENARIO else "source"
    _check_work(field, scenario, normalized, steps=STEPS_PER_RUN)

    return _queue(
        name=name,
        source=source,
        scenario_text=scenario_text,
        changes=normalized,
        horizon=int(horizon),
        created_by=user,
    )


def _checked_run(name: Any, source: str, horizon: Any) -> str:
    """The run's name, stripped, once its name, source and horizon are valid
    (ValidationError keyed by field otherwise)."""
    errors = FieldErrors()
    name = name.strip() if isinstance(name, str) else ""
    if not name:
        errors.add("name", "give the run a name, e.g. 'vision quota 4'")
    elif len(name) > 120:
        errors.add("name", f"at most 120 characters, got {len(name)}")
    if source not in SimulationSource.values:
        errors.add("source", f"must be one of {', '.join(SimulationSource.values)}, got {source!r}")
    _check_horizon(errors, "horizon", horizon, MAX_HORIZON)
    errors.raise_if_any()
    return name


def _scenario_of(source: str, scenario_text: str) -> tuple[dict[str, Any], str]:
    """The scenario a scenario or live run starts from, and its text: the text given, or
    a copy of the live cluster now (which takes no text)."""
    if source == SimulationSource.SCENARIO:
        return parse_scenario_text(scenario_text), scenario_text
    if isinstance(scenario_text, str) and scenario_text.strip():
        raise ValidationError(
            {"scenario_text": ["leave empty: a live run copies the cluster as it is now"]}
        )
    scenario = scenario_from_live_cluster(name=f"live-copy-{timezone.now():%Y%m%d-%H%M%S}")
    return scenario, json.dumps(scenario, indent=1)


def _create_trace_run(
    user,
    name: str,
    text: Any,
    options: Any,
    *,
    scenario_text: Any,
    changes: Any,
) -> Simulation:
    """Check a trace run's options and trace (reading its window) and queue it."""
    errors = FieldErrors()
    if isinstance(scenario_text, str) and scenario_text.strip():
        errors.add("scenario_text", "leave empty: a trace run replays the trace")
    if not is_empty(changes):
        errors.add("changes", "a trace run takes pool settings in its options (`config`)")
    request, problems = check_trace_request(text, {} if options is None else options)
    for key, message in problems:
        errors.add(key if key in ("trace", "trace_text") else f"trace.{key}", message)
    errors.raise_if_any()
    assert request is not None
    return _queue(
        name=name,
        source=SimulationSource.TRACE,
        trace_text=text,
        trace_options=request.options(),
        horizon=round(request.hours * 3600),  # the window the trace is read for
        created_by=user,
    )


def _queue(**fields: Any) -> Simulation:
    """Store the run and have a worker start it once the transaction commits."""
    simulation_fail_stale()
    with transaction.atomic():
        simulation = Simulation.objects.create(progress_message="waiting for a worker", **fields)
        pk = simulation.pk
        transaction.on_commit(lambda: _enqueue(pk))
        publish_created(simulation)
    return simulation


def simulation_preview(
    *, user, changes: dict[str, Any] | None, horizon: int = 900
) -> dict[str, Any]:
    """Try `changes` on a copy of the live cluster right now, in this process, and return
    the comparison (the result shape of a live run; nothing is stored).

    For the quota page's "what would this do" before saving: fewer steps than a full run
    (PREVIEW_STEPS) and a horizon of at most a day. Big clusters or long horizons should
    use `simulation_create`, which runs in a worker and shows progress.
    """
    _require_admin(user)
    errors = FieldErrors()
    _check_horizon(errors, "horizon", horizon, PREVIEW_MAX_HORIZON)
    errors.raise_if_any()
    scenario = scenario_from_live_cluster(name="preview")
    normalized = validate_changes(changes, scenario=scenario)
    _check_change_permissions(user, normalized)
    _check_work("changes", scenario, normalized, steps=PREVIEW_STEPS)
    result = run_whatif(
        scenario=scenario,
        changes=normalized,
        horizon=horizon,
        on_progress=lambda fraction, message: None,
        steps=PREVIEW_STEPS,
    )
    if access.is_system_admin(user):
        return result
    visible = set(Project.objects.visible_to(user).values_list("name", flat=True))
    return redact_projects(result, visible=visible, other=OTHER_PROJECTS)


def simulation_delete(*, user, simulation: Simulation) -> None:
    """Delete a finished or failed run (its creator or a system admin)."""
    if not (access.is_system_admin(user) or simulation.created_by_id == getattr(user, "pk", None)):
        raise PermissionDenied("only the creator of a simulation or a system admin can delete it")
    if simulation.status == SimulationStatus.RUNNING:
        raise Conflict({"status": ["this run is still going; wait until it ends"]})
    simulation.delete()


def parse_scenario_text(text: Any) -> dict[str, Any]:
    """A scenario's text as a dict, checked by the engine's loader; errors name the field."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(
            {"scenario_text": ["paste or upload a scenario (YAML or JSON, see FORMAT.md)"]}
        )
    if len(text) > MAX_SCENARIO_CHARS:
        raise ValidationError(
            {"scenario_text": [f"at most {MAX_SCENARIO_CHARS} characters, got {len(text)}"]}
        )
    try:
        data = parse_bounded(lambda: yaml.safe_load(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValidationError({"scenario_text": [f"{SCENARIO_FILE}: {where}{problem}"]}) from None
    except NestingTooDeep as exc:
        raise ValidationError({"scenario_text": [f"{SCENARIO_FILE}: {exc}"]}) from None
    if not isinstance(data, dict):
        raise ValidationError(
            {"scenario_text": [f"{SCENARIO_FILE}: must be a mapping with pools, nodes, ..."]}
        )
    from scheduler_core.whatif.scenarios import ScenarioError, parse_scenario

    try:
        parse_scenario(data, SCENARIO_FILE)
    except ScenarioError as exc:
        raise ValidationError({"scenario_text": [str(exc)]}) from None
    return data


def _require_admin(user) -> None:
    if not access.is_any_admin(user):
        raise PermissionDenied("only system admins and department admins can run simulations")


def _check_horizon(errors: FieldErrors, field: str, horizon: Any, maximum: int) -> None:
    if isinstance(horizon, bool) or not isinstance(horizon, int | float):
        errors.add(field, f"must be a number of seconds, got {horizon!r}")
    elif not float(horizon).is_integer() or not MIN_HORIZON <= horizon <= maximum:
        errors.add(field, f"must be a whole number of seconds from {MIN_HORIZON} to {maximum}")


def _check_work(
    field: str, scenario: dict[str, Any], changes: dict[str, Any], *, steps: int
) -> None:
    """Refuse a run whose scheduling would cost more than MAX_WHATIF_WORK: runs (baseline,
    and changed) x steps (the scenario's and those up to the horizon) x nodes x workloads."""
    nodes = sum(int(n.get("count") or 1) for n in scenario.get("nodes") or [])
    nodes += sum(int(n.get("count") or 1) for n in changes.get("add_nodes") or [])
    timeline = scenario.get("steps") or []
    submitted = sum(1 for step in timeline for e in step.get("events") or [] if "submit" in e)
    workloads = len(scenario.get("workloads") or []) + submitted
    runs = 1 if is_empty(changes) else 2
    steps += len(timeline) + 1
    if runs * steps * max(nodes, 1) * max(workloads, 1) > MAX_WHATIF_WORK:
        raise ValidationError(
            {
                field: [
                    f"too big to simulate: {runs} run(s) of {steps} steps over {nodes} nodes "
                    f"and {workloads} workloads; at most {MAX_WHATIF_WORK:,} runs x steps x "
                    "nodes x workloads (use fewer nodes or workloads)"
                ]
            }
        )


def _check_change_permissions(user, changes: dict[str, Any]) -> None:
    """Department admins may only try what they could do: their projects' quotas/weights."""
    managed = access.managed_department_ids(user)
    if managed is None:
        return
    mine = set(Project.objects.filter(department_id__in=managed).values_list("name", flat=True))
    errors = FieldErrors()
    for key in ("quotas", "weights"):
        for i, item in enumerate(changes.get(key, [])):
            if "department" in item:
                errors.add(
                    f"changes.{key}[{i}].department", "only system admins change departments"
                )
            elif item.get("project") not in mine:
                errors.add(
                    f"changes.{key}[{i}].project",
                    "you can only try changes to projects of departments you manage",
                )
    for key in ("pools", "add_nodes", "remove_nodes"):
        if changes.get(key):
            errors.add(f"changes.{key}", "only system admins change pools and nodes")
    errors.raise_if_any()


def _enqueue(simulation_id: int) -> None:
    try:
        current_app.signature(SIMULATION_TASK, args=(simulation_id,)).apply_async()
    except Exception as exc:  # broker down: say so instead of waiting forever
        logger.exception("could not queue simulation %s", simulation_id)
        _finish(
            Simulation.objects.get(pk=simulation_id),
            status=SimulationStatus.FAILED,
            error=f"could not queue the run ({exc}); is the task queue (Redis) up?",
        )


# --- running ----------------------------------------------------------------------------


class ProgressReporter:
    """Saves and pushes progress, at most every PROGRESS_EVERY_SECONDS or 5 %."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation
        self.last_time = 0.0
        self.last_fraction = -1.0

    def __call__(self, fraction: float, message: str) -> None:
        fraction = min(max(float(fraction), 0.0), 1.0)
        now = time.monotonic()
        if (
            now - self.last_time < PROGRESS_EVERY_SECONDS
            and fraction - self.last_fraction < PROGRESS_EVERY_FRACTION
        ):
            return
        self.last_time, self.last_fraction = now, fraction
        sim = self.simulation
        sim.progress = round(fraction, 4)
        sim.progress_message = message[:255]
        Simulation.objects.filter(pk=sim.pk).update(
            progress=sim.progress, progress_message=sim.progress_message
        )
        publish_progress(sim)


def simulation_run(*, simulation_id: int) -> Simulation | None:
    """Run a queued simulation (the Celery task calls this): progress, then result or error.

    A run found `running` is started again (its worker died and the message came back);
    a finished one is left alone.
    """
    simulation_fail_stale()
    with transaction.atomic():
        sim = Simulation.objects.select_for_update().filter(pk=simulation_id).first()
        if sim is None or sim.status in (SimulationStatus.SUCCEEDED, SimulationStatus.FAILED):
            return sim
        sim.status = SimulationStatus.RUNNING
        sim.started_at = timezone.now()
        sim.progress = 0
        sim.progress_message = "starting"
        sim.error = ""
        sim.result = None
        sim.save(
            update_fields=[
                "status",
                "started_at",
                "progress",
                "progress_message",
                "error",
                "result",
            ]
        )
        publish_progress(sim)
    try:
        if sim.source == SimulationSource.TRACE:
            result = run_trace(sim.trace_text, _trace_request(sim), ProgressReporter(sim))
        else:
            result = run_whatif(
                scenario=yaml.safe_load(sim.scenario_text),
                changes=sim.changes,
                horizon=sim.horizon,
                on_progress=ProgressReporter(sim),
            )
    except Exception as exc:  # anything: the run must end failed, with the reason
        logger.exception("simulation %s failed", sim.pk)
        return _finish(sim, status=SimulationStatus.FAILED, error=_error_text(exc))
    return _finish(sim, status=SimulationStatus.SUCCEEDED, result=result)


def _trace_request(sim: Simulation) -> TraceRequest:
    """The stored trace run's request (its options are JSON, checked again; the trace
    was checked when the run was made and is read once, by the run)."""
    request, problems = check_trace_options(sim.trace_options)
    if request is None:
        raise ValueError("; ".join(f"{key}: {message}" for key, message in problems))
    return request


def _error_text(exc: BaseException) -> str:
    from scheduler_core.whatif.scenarios import ScenarioError

    if isinstance(exc, ScenarioError):
        return str(exc)
    return f"the simulation stopped with an error: {type(exc).__name__}: {exc}"


def _finish(
    sim: Simulation, *, status: str, result: dict[str, Any] | None = None, error: str = ""
) -> Simulation:
    sim.status = status
    sim.result = result
    sim.error = error
    sim.finished_at = timezone.now()
    if status == SimulationStatus.SUCCEEDED:
        sim.progress, sim.progress_message = 1.0, "done"
    else:
        sim.progress_message = "failed"
    sim.save(
        update_fields=["status", "result", "error", "finished_at", "progress", "progress_message"]
    )
    publish_progress(sim)
    return sim


def simulation_fail_stale(*, now: datetime | None = None) -> int:
    """Mark runs lost: running past SIMULATION_TIMEOUT, or queued past the queued timeout.

    Returns how many were marked failed.
    """
    now = now or timezone.now()
    lost = {
        "running": Simulation.objects.filter(
            status=SimulationStatus.RUNNING, started_at__lt=now - _timeout()
        ),
        "queued": Simulation.objects.filter(
            status=SimulationStatus.QUEUED, created_at__lt=now - _queued_timeout()
        ),
    }
    messages = {
        "running": "the run stopped answering (the worker may have been restarted); run it again",
        "queued": "no worker picked this run up; check that the Celery worker is running "
        "and run it again",
    }
    count = 0
    for key, qs in lost.items():
        for sim in qs:
            updated = Simulation.objects.filter(pk=sim.pk, status=sim.status).update(
                status=SimulationStatus.FAILED,
                error=messages[key],
                progress_message="failed",
                finished_at=now,
            )
            if updated:
                sim.status, sim.error, sim.progress_message = (
                    SimulationStatus.FAILED,
                    messages[key],
                    "failed",
                )
                sim.finished_at = now
                publish_progress(sim)
                count += 1
    return count


# --- pushing progress -------------------------------------------------------------------


def simulation_group(simulation_id: int) -> str:
    """Channel group of one run's progress (its creator and system admins may join)."""
    return group_name("simulation", simulation_id)


def publish_created(sim: Simulation) -> None:
    """Tell the open runs lists (`simulations`) that a run exists, after commit: its id and
    creator only, never its name (the consumer forwards the id to those who may see it)."""
    message = {
        "type": "simulation.created",
        "group": SIMULATIONS_GROUP,
        "simulation": {"id": sim.pk, "created_by_id": sim.created_by_id},
    }
    send_after_commit([(SIMULATIONS_GROUP, message)])


def simulation_state(sim: Simulation) -> dict[str, Any]:
    """What a progress bar needs."""
    return {
        "id": sim.pk,
        "name": sim.name,
        "status": sim.status,
        "progress": sim.progress,
        "progress_message": sim.progress_message,
        "error": sim.error,
        "started_at": sim.started_at.isoformat() if sim.started_at else None,
        "finished_at": sim.finished_at.isoformat() if sim.finished_at else None,
    }


def publish_progress(sim: Simulation) -> None:
    """Push the run's state to `simulation-<id>` (after commit; at once outside a transaction)."""
    group = simulation_group(sim.pk)
    message = {"type": "simulation.progress", "group": group}
    send_after_commit([(group, {**message, "simulation": simulation_state(sim)})])
