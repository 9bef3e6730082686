"""Celery tasks: the scheduling cycle and the runtime tick. They only call into the core."""

from celery import shared_task
from django.conf import settings

from scheduler_core import cycle, runtime, triggers


@shared_task(name="scheduler_core.tasks.run_cycle_task", ignore_result=True)
def run_cycle_task() -> None:
    """Run scheduling cycles while they are wanted (or queue a follow-up if another worker
    is running them). Eager tasks (no broker) never wait for simulated runs to end: they
    run inside the request that asked for them."""
    triggers.cycle_task_started()
    cycle.run_scheduling_loop(wait=not settings.CELERY_TASK_ALWAYS_EAGER)


@shared_task(name="scheduler_core.tasks.runtime_tick_task", ignore_result=True)
def runtime_tick_task() -> None:
    """Advance simulated runtime, check node heartbeats, prune old history."""
    runtime.tick()
