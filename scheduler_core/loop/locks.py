"""The cycle lock: one scheduling cycle at a time across every worker.

Non-blocking (a worker that cannot take it queues a follow-up instead of waiting), and
released when its holder dies:

- PostgreSQL: a session-level `pg_try_advisory_lock` on a dedicated connection. The lock
  belongs to that connection, so a killed worker's lock disappears with its socket.
- Otherwise (SQLite) with Redis: a Redis lock with an expiry, renewed by a background
  thread while the cycle runs; a dead holder stops renewing and the lock expires.
- Without Redis (embedded, tasks run eagerly in one process): a process-local lock.

A lock that cannot be reached (Redis or the database down) is not acquired: the cycle is
skipped with a warning, and the beat asks again once the service is back.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from typing import Protocol

from django.conf import settings
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from scheduler_core.outages import DATABASE_OUTAGES, REDIS_OUTAGES, on_redis_outage

logger = logging.getLogger(__name__)

_local_lock = threading.Lock()


def lock_name() -> str:
    """The name of the cycle lock in this installation."""
    return f"{settings.SCHEDULER_KEY_PREFIX}:cycle-lock"


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for pg_try_advisory_lock."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class CycleLock(Protocol):
    def acquire(self) -> bool: ...

    def still_held(self) -> bool: ...

    def release(self) -> None: ...


class AdvisoryLock:
    """PostgreSQL session-level advisory lock on a connection of its own."""

    def __init__(self, name: str, alias: str = "default") -> None:
        self.key = advisory_key(name)
        self.alias = alias
        self.connection: BaseDatabaseWrapper | None = None

    def acquire(self) -> bool:
        conn = connections.create_connection(self.alias)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [self.key])
                acquired = bool(cursor.fetchone()[0])
        except DATABASE_OUTAGES as exc:
            logger.warning("cycle lock: the database is unreachable (%s); no cycle now", exc)
            acquired = False
        except Exception:
            conn.close()
            raise
        if not acquired:
            conn.close()
            return False
        self.connection = conn
        return True

    def still_held(self) -> bool:
        if self.connection is None:
            return False
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                    "AND pid = pg_backend_pid() AND granted"
                )
                return cursor.fetchone()[0] > 0
        except Exception:
            logger.exception("cycle lock connection lost")
            return False

    def release(self) -> None:
        conn, self.connection = self.connection, None
        if conn is None:
            return
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [self.key])
        except Exception:  # closing the connection releases it anyway
            logger.warning("could not unlock the cycle lock cleanly", exc_info=True)
        finally:
            conn.close()


class RedisLock:
    """A Redis lock with an expiry, renewed by a thread while it is held."""

    def __init__(self, name: str, url: str, ttl: float) -> None:
        import redis

        self.ttl = ttl
        self.client = redis.Redis.from_url(url)
        self.lock = self.client.lock(name, timeout=ttl, blocking=False, thread_local=False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @on_redis_outage(False, "no cycle until the beat asks again")
    def acquire(self) -> bool:
        if not self.lock.acquire(blocking=False, token=uuid.uuid4().hex):
            return False
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew, name="cycle-lock-renewal", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.lock.reacquire()
            except Exception:
                logger.exception("lost the cycle lock while the cycle was running")
                return

    def still_held(self) -> bool:
        try:
            return bool(self.lock.owned())
        except Exception:
            return False

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
            self._thread = None
        try:
            self.lock.release()
        except REDIS_OUTAGES as exc:
            logger.warning("cycle lock not released: Redis is unreachable (%s); it expires "
                           "by itself", exc)  # fmt: skip
        except Exception:  # expired or taken over: nothing left to release
            logger.warning("cycle lock was no longer ours at release", exc_info=True)
        finally:
            self.client.close()


class LocalLock:
    """A process-local lock for embedded use without Redis (tasks run eagerly)."""

    def __init__(self) -> None:
        self.held = False

    def acquire(self) -> bool:
        self.held = _local_lock.acquire(blocking=False)
        return self.held

    def still_held(self) -> bool:
        return self.held

    def release(self) -> None:
        if self.held:
            self.held = False
            _local_lock.release()


def new_cycle_lock() -> CycleLock:
    """The right kind of cycle lock for this installation's database and broker."""
    if connections["default"].vendor == "postgresql":
        return AdvisoryLock(lock_name())
    if settings.REDIS_URL:
        return RedisLock(lock_name(), settings.REDIS_URL, settings.SCHEDULER_LOCK_TTL)
    return LocalLock()


def cycle_lock_is_free() -> bool:
    """True when no one holds the cycle lock (takes and drops it to find out)."""
    lock = new_cycle_lock()
    if lock.acquire():
        lock.release()
        return True
    return False
