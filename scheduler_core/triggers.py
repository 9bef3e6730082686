"""Asking for a scheduling cycle after something that matters changed.

Services call `request_cycle()` inside their transaction; the cycle task is enqueued only
after commit, and bursts are coalesced so that a thousand submissions cause a handful of
cycles, not a thousand.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction

COALESCE_KEY = "fairway:cycle-enqueued"
COALESCE_SECONDS = 0.5


def request_cycle() -> None:
    """Enqueue one scheduling cycle after the current transaction commits."""
    transaction.on_commit(_enqueue_cycle)


def _enqueue_cycle() -> None:
    from django.conf import settings

    if getattr(settings, "SCHEDULER_AUTORUN", True) is False:
        return
    # Coalesce: one enqueue per short window; the cycle itself queues one follow-up when
    # it is asked again while running, so no request is lost.
    if not cache.add(COALESCE_KEY, 1, timeout=COALESCE_SECONDS):
        return
    from scheduler_core.tasks import run_cycle_task

    run_cycle_task.delay()
