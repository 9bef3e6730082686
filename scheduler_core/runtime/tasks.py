"""Celery tasks of the runtime: the periodic tick, and the roll-up of GPU usage samples
(services.gpu_usage, once a minute: its own task, so a big cluster's roll-up never delays
the tick). They only call into the runtime and its service."""

from celery import shared_task

from scheduler_core.runtime.tick import tick
from scheduler_core.services.gpu_usage import gpu_usage_roll_up


@shared_task(name="scheduler_core.runtime.tasks.runtime_tick_task", ignore_result=True)
def runtime_tick_task() -> None:
    """Advance simulated runtime, check node heartbeats, prune old history."""
    tick()


@shared_task(name="scheduler_core.runtime.tasks.gpu_usage_roll_up_task", ignore_result=True)
def gpu_usage_roll_up_task() -> None:
    """Roll the agents' GPU samples up into minutes and hours; prune old history."""
    gpu_usage_roll_up()
