"""Celery task of the runtime: the periodic tick. It only calls into the runtime."""

from celery import shared_task

from scheduler_core.runtime.tick import tick


@shared_task(name="scheduler_core.runtime.tasks.runtime_tick_task", ignore_result=True)
def runtime_tick_task() -> None:
    """Advance simulated runtime, check node heartbeats, prune old history."""
    tick()
