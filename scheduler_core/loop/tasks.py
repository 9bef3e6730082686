"""Celery task of the loop: the scheduling cycle. It only calls into the loop."""

from celery import shared_task
from django.conf import settings

from scheduler_core.loop import cycle, triggers


@shared_task(name=triggers.CYCLE_TASK, ignore_result=True)
def run_cycle_task() -> None:
    """Run scheduling cycles while they are wanted (or queue a follow-up if another worker
    is running them). Eager tasks (no broker) never wait for simulated runs to end: they
    run inside the request that asked for them."""
    triggers.cycle_task_started()
    cycle.run_scheduling_loop(wait=not settings.CELERY_TASK_ALWAYS_EAGER)
