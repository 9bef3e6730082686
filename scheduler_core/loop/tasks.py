"""Celery task of the loop: the scheduling cycle. It only calls into the loop."""

from celery import Task, shared_task
from django.conf import settings

from scheduler_core.loop import cycle, triggers


class CycleTask(Task):
    """The cycle task of a process; it keeps that process's loop state between runs (a
    Celery task object lives as long as its process)."""

    loop_state: cycle.LoopState | None = None

    def state(self) -> cycle.LoopState:
        if self.loop_state is None:
            self.loop_state = cycle.LoopState()
        return self.loop_state


@shared_task(bind=True, base=CycleTask, name=triggers.CYCLE_TASK, ignore_result=True)
def run_cycle_task(self: CycleTask) -> None:
    """Run scheduling cycles while they are wanted (or queue a follow-up if another worker
    is running them). Eager tasks (no broker) never wait for simulated runs to end: they
    run inside the request that asked for them."""
    triggers.cycle_task_started()
    cycle.run_scheduling_loop(wait=not settings.CELERY_TASK_ALWAYS_EAGER, state=self.state())
