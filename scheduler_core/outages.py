"""What an outage of a backing service looks like, and how long to wait before retrying.

Redis (broker, cache, channel layer) and the database can each be unreachable for a while.
What needs them then fails with one of these exceptions; callers decide what that means:
the cycle triggers and lock give up until the next beat, the submission rate limit is not
applied, and a request that cannot be served answers 503 with Retry-After (api.outages).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TypeVar

import kombu.exceptions
import redis.exceptions
from django.db import InterfaceError, OperationalError

logger = logging.getLogger(__name__)

REDIS_OUTAGES: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,  # also BusyLoadingError while Redis restarts
    redis.exceptions.TimeoutError,
    kombu.exceptions.OperationalError,  # a task could not be sent to the broker
)
DATABASE_OUTAGES: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
OUTAGES = REDIS_OUTAGES + DATABASE_OUTAGES

RETRY_AFTER_SECONDS = 5
"""What a client is told to wait (Retry-After) when a service it needs is unreachable."""

T = TypeVar("T")


def on_redis_outage(default: T, consequence: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorate a function that talks to Redis: during an outage it logs a warning saying
    `consequence` and returns `default` instead of raising."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(function)
        def wrapper(*args, **kwargs) -> T:
            try:
                return function(*args, **kwargs)
            except REDIS_OUTAGES as exc:
                logger.warning("%s: Redis is unreachable (%s); %s", function.__name__, exc,
                               consequence)  # fmt: skip
                return default

        return wrapper

    return decorate
