"""Celery tasks of what-if runs (imported by SchedulerCoreConfig.ready, since Celery's
autodiscovery only imports `tasks` modules).

- run_simulation_task(simulation_id): runs one simulation (services.simulations).
- fail_stale_simulations_task(): marks lost runs failed; for the beat schedule, e.g.
  {"task": "scheduler_core.whatif.tasks.fail_stale_simulations_task", "schedule": 300}.
  It also runs whenever a worker starts.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task
from celery.signals import worker_ready
from django.conf import settings

from scheduler_core.services.simulations import (
    SIMULATION_TASK,
    simulation_fail_stale,
    simulation_run,
)

logger = logging.getLogger(__name__)
TIMEOUT = int(getattr(settings, "SIMULATION_TIMEOUT", 3600))


class SimulationTask(Task):
    """Marks the run failed if the task itself dies (time limit, lost worker process)."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        from scheduler_core.choices import SimulationStatus
        from scheduler_core.models import Simulation
        from scheduler_core.services.simulations import publish_progress

        simulation_id = (args or [None])[0] or kwargs.get("simulation_id")
        if simulation_id is None:
            return
        updated = Simulation.objects.filter(
            pk=simulation_id, status__in=[SimulationStatus.QUEUED, SimulationStatus.RUNNING]
        ).update(
            status=SimulationStatus.FAILED,
            error=f"the simulation task failed: {type(exc).__name__}: {exc}",
            progress_message="failed",
        )
        if updated:
            publish_progress(Simulation.objects.get(pk=simulation_id))


@shared_task(
    name=SIMULATION_TASK,
    base=SimulationTask,
    ignore_result=True,
    soft_time_limit=TIMEOUT,
    time_limit=TIMEOUT + 60,
)
def run_simulation_task(simulation_id: int) -> None:
    """Run one what-if simulation; progress, result and errors are stored on it."""
    simulation_run(simulation_id=simulation_id)


@shared_task(name="scheduler_core.whatif.tasks.fail_stale_simulations_task", ignore_result=True)
def fail_stale_simulations_task() -> int:
    """Mark runs that stopped answering (or were never picked up) as failed."""
    return simulation_fail_stale()


@worker_ready.connect(dispatch_uid="fairway-fail-stale-simulations")
def _fail_stale_on_worker_start(**kwargs) -> None:
    try:
        simulation_fail_stale()
    except Exception:  # a worker must start even if the database is briefly away
        logger.exception("could not check for lost simulations")
