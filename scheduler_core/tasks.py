"""Celery tasks (placeholder: the live scheduler issue fills these in)."""

from celery import shared_task


@shared_task(name="scheduler_core.tasks.run_cycle_task", ignore_result=True)
def run_cycle_task() -> None:
    """Run one scheduling cycle."""


@shared_task(name="scheduler_core.tasks.runtime_tick_task", ignore_result=True)
def runtime_tick_task() -> None:
    """Advance simulated runtime."""
