"""Failed sign-in attempts, limited per username and per client address.

Every way of signing in with a password (HTTP Basic on POST /api/v1/tokens/, the
console's /login/, the admin's /admin/login/) goes through `sign_in_attempt`. Failures are
counted in the shared cache (Redis when configured, so every process sees the same counts)
in fixed windows of SIGN_IN_FAILURE_WINDOW seconds: once a username has failed
SIGN_IN_FAILURES_PER_USERNAME times in the current window, or an address
SIGN_IN_FAILURES_PER_ADDRESS times, attempts are refused without checking the password
until the window ends (SignInLocked says how long).

The address is the connection's (REMOTE_ADDR): behind a proxy every client shares the
proxy's address, so SIGN_IN_FAILURES_PER_ADDRESS should then be set high.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.conf import settings
from django.core.cache import cache


class SignInLocked(Exception):
    """Too many failed sign-ins for this username or from this address: wait `seconds`."""

    def __init__(self, seconds: int) -> None:
        plural = "s" if seconds != 1 else ""
        super().__init__(f"too many failed sign-in attempts: try again in {seconds} second{plural}")
        self.seconds = seconds


def address_of(request) -> str:
    """The client address of an HTTP request (Django's or DRF's)."""
    return request.META.get("REMOTE_ADDR") or "unknown"


def _counters(username: str, address: str) -> tuple[list[tuple[str, int]], int]:
    """The cache keys counting this window's failures with their limits, and the seconds
    until the window ends."""
    window = settings.SIGN_IN_FAILURE_WINDOW
    now = time.time()
    bucket = int(now // window)
    user = hashlib.sha256(username.casefold().encode()).hexdigest()[:32]
    prefix = f"{settings.SCHEDULER_KEY_PREFIX}:sign-in-failures:{bucket}"
    keys = [
        (f"{prefix}:user:{user}", settings.SIGN_IN_FAILURES_PER_USERNAME),
        (f"{prefix}:address:{address}", settings.SIGN_IN_FAILURES_PER_ADDRESS),
    ]
    return keys, max(1, math.ceil((bucket + 1) * window - now))


def _locked_for(username: str, address: str) -> int:
    """Seconds until `username` from `address` may try again; 0 when it may now."""
    keys, left = _counters(username, address)
    counts = cache.get_many([key for key, _ in keys])
    return left if any(counts.get(key, 0) >= limit for key, limit in keys) else 0


def _count_failure(username: str, address: str) -> None:
    keys, left = _counters(username, address)
    for key, _ in keys:
        cache.add(key, 0, timeout=left + 1)
        with suppress(ValueError):  # the window ended between the two calls
            cache.incr(key)


@contextmanager
def sign_in_attempt(
    *, username: str, address: str, failure: type[Exception] | tuple[type[Exception], ...]
) -> Iterator[None]:
    """Check a password inside this block: raises SignInLocked instead of entering it while
    `username` or `address` is locked out, and counts a failure when the block raises
    `failure` (the caller's "wrong password" exception, re-raised)."""
    wait = _locked_for(username, address)
    if wait:
        raise SignInLocked(wait)
    try:
        yield
    except failure:
        _count_failure(username, address)
        raise
