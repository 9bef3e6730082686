"""Asking for a scheduling cycle after something that matters changed.

Services call `request_cycle()` inside their transaction; the cycle task is enqueued only
after commit. Requests are coalesced without losing any:

- a request while a cycle task is *queued* (not started) adds nothing: that task has not
  read the database yet, so it will see the change;
- a cycle task forgets the "queued" mark as its first step, so a request arriving once it
  has started enqueues one more task;
- a task that finds the cycle lock taken leaves a "follow-up wanted" mark; the lock holder
  checks it after releasing the lock and enqueues exactly one follow-up.

- every request also leaves the "follow-up wanted" mark, which a worker's scheduling loop
  (scheduler_core.loop.cycle.run_scheduling_loop) watches between its cycles;
- while a loop runs it says so (the "loop running" mark): a request then only leaves the
  follow-up mark, which the loop runs, or hands to a new task when it stops (it drops its
  own mark first, then takes the follow-up: a request that saw the loop running left its
  mark before). A stream of agents' reports is so scheduled by one loop, not a task per
  report, each taking the cycle lock on a connection of its own.

So a burst of a thousand submissions causes a handful of cycles, and the last change of
any burst is always seen by a cycle that starts after it.

While Redis is unreachable none of this can be done: the marks are skipped with a warning
(a request then answers as usual: its change is saved), and the beat runs the cycle once
Redis is back.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from scheduler_core.outages import on_redis_outage

logger = logging.getLogger(__name__)

CYCLE_TASK = "scheduler_core.loop.tasks.run_cycle_task"
"""The name of the cycle task (scheduler_core.loop.tasks), by which requests send it."""

QUEUED_TTL = 30  # a lost task stops suppressing requests after this; beat covers the gap
FOLLOW_UP_TTL = 120
LOOP_MARK_MARGIN = 30  # seconds a dead loop's mark outlives its budget; beat covers the gap


def _key(name: str) -> str:
    return f"{settings.SCHEDULER_KEY_PREFIX}:cycle:{name}"


def queued_key() -> str:
    return _key("queued")


def follow_up_key() -> str:
    return _key("follow-up")


def request_cycle() -> None:
    """Ask for a scheduling cycle after the current transaction commits."""
    transaction.on_commit(_requested)


def _requested() -> None:
    # A worker's scheduling loop runs the follow-up itself; otherwise the task does.
    want_follow_up()
    if not loop_running():
        enqueue_cycle()


def loop_key() -> str:
    return _key("loop")


@on_redis_outage(None, "requests enqueue tasks as usual")
def loop_started(seconds: float) -> None:
    """A scheduling loop holds the cycle lock for up to `seconds` (and one cycle more):
    requests leave their follow-up mark for it and enqueue no task."""
    cache.set(loop_key(), 1, timeout=int(seconds) + LOOP_MARK_MARGIN)


@on_redis_outage(None, "its mark expires by itself")
def loop_stopped() -> None:
    """Called by a loop before it takes the last follow-up (see the module docstring)."""
    cache.delete(loop_key())


@on_redis_outage(False, "the request enqueues a task")
def loop_running() -> bool:
    return cache.get(loop_key()) is not None


@on_redis_outage(False, "the beat will run the cycle")
def enqueue_cycle() -> bool:
    """Enqueue a cycle task now unless one is already queued; True when one was sent."""
    if getattr(settings, "SCHEDULER_AUTORUN", True) is False:
        return False
    if not cache.add(queued_key(), 1, timeout=QUEUED_TTL):
        return False
    try:
        send_cycle_task()
    except Exception:
        cache.delete(queued_key())
        logger.exception("could not enqueue a scheduling cycle (the beat will run one)")
        return False
    return True


def send_cycle_task() -> None:
    """Put one cycle task on the cycle queue. Sent by name: nothing that asks for a cycle
    imports the loop (a task registered in this process still runs eagerly in tests)."""
    options = {"queue": settings.SCHEDULER_CYCLE_QUEUE} if settings.SCHEDULER_CYCLE_QUEUE else {}
    current_app.signature(CYCLE_TASK).apply_async(**options)


@on_redis_outage(None, "its queued mark expires by itself")
def cycle_task_started() -> None:
    """Called first by a cycle task: later requests must enqueue a new task."""
    cache.delete(queued_key())


@on_redis_outage(None, "the beat will run the cycle")
def want_follow_up() -> None:
    """A cycle was asked for while another one ran: run one more after it."""
    cache.set(follow_up_key(), 1, timeout=FOLLOW_UP_TTL)


@on_redis_outage(False, "no follow-up cycle until the beat")
def follow_up_wanted() -> bool:
    """Whether a cycle was asked for since the last one started (without taking it)."""
    return cache.get(follow_up_key()) is not None


@on_redis_outage(False, "no follow-up cycle until the beat")
def take_follow_up() -> bool:
    """True (once) when a follow-up cycle was asked for."""
    return bool(cache.delete(follow_up_key()))
