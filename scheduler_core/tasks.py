"""Celery tasks: the scheduling cycle and the runtime tick. They only call into the core."""

from celery import shared_task

from scheduler_core import cycle, runtime, triggers


@shared_task(name="scheduler_core.tasks.run_cycle_task", ignore_result=True)
def run_cycle_task() -> None:
    """Run one scheduling cycle (or queue a follow-up if one is running elsewhere)."""
    triggers.cycle_task_started()
    cycle.run_cycle()


@shared_task(name="scheduler_core.tasks.runtime_tick_task", ignore_result=True)
def runtime_tick_task() -> None:
    """Advance simulated runtime, check node heartbeats, prune old history."""
    runtime.tick()
