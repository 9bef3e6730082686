"""The Celery application: scheduling cycles, simulated runtime and what-if runs."""

import gc
import os

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
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
