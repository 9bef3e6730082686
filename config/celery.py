"""The Celery application: scheduling cycles, simulated runtime and what-if runs."""

import contextlib
import gc
import os
import signal

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutting_down,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("fairway")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _publish_events_in_background(**kwargs) -> None:
    """Workers run the scheduling loop: they hand events to a publisher thread instead of
    waiting for the channel layer after every cycle (scheduler_core.live_events.publisher)."""
    from scheduler_core.live_events import publisher as event_publisher

    event_publisher.enable()


# What the worker sends its pool processes when it shuts down (Celery leaves SIGUSR2 alone
# unless CELERY_RDBSIG is set, in the main process only).
STOP_LOOPS_SIGNAL = signal.SIGUSR2


@worker_process_init.connect
def _stop_loops_when_told(**kwargs) -> None:
    """A pool process ends its scheduling loop when the worker shuts down (below)."""
    from scheduler_core.loop.cycle import stop_loops

    signal.signal(STOP_LOOPS_SIGNAL, lambda signum, frame: stop_loops())


@worker_shutting_down.connect
def _end_scheduling_loops(**kwargs) -> None:
    """A warm shutdown (SIGTERM, Ctrl-C) waits for the tasks being run, and a scheduling
    loop's task runs up to SCHEDULER_LOOP_SECONDS: the loops end after their current
    cycle instead, so the worker stops within about a cycle (and a pool process is never
    killed under its task, which Celery logs as a lost task)."""
    from billiard.process import active_children

    from scheduler_core.loop.cycle import stop_loops

    stop_loops()  # a solo or threads pool runs its tasks in this process
    for child in active_children():
        if child.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, STOP_LOOPS_SIGNAL)


@worker_ready.connect
@worker_process_init.connect
def _freeze_startup_objects(**kwargs) -> None:
    """Keep what the worker loaded at startup (Django, the apps, their modules: about
    175,000 objects) out of the garbage collector's full collections, which would
    otherwise walk all of it every few cycles (about 80 ms each under load), and collect
    the youngest generation after WORKER_GC_THRESHOLD new objects instead of Python's 700:
    a cycle over a thousand queues makes millions of objects, nearly all freed by their
    reference counts, and Python's default ran 110-150 collections per large-scale cycle."""
    from django.conf import settings

    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(settings.WORKER_GC_THRESHOLD, older, oldest)


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(sender=None, **kwargs) -> None:
    """Around each task (not one run eagerly, inside its caller), close the database
    connections that are too old (DB_CONN_MAX_AGE) or broke, as Django does around a
    request; the others are kept for the next task (settings.CELERY_DB_REUSE_MAX)."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
