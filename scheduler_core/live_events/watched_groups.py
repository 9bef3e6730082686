"""Which event groups someone is listening to.

A cycle on a busy cluster records thousands of events, each meant for its workload's
group `workload-<id>` as well as the cluster, pool and project groups. Almost no workload
group has a listener at any moment (a browser watches the few workloads whose pages are
open), on a cluster of a thousand projects few project groups do (a researcher's pages
listen to their own projects), and the cluster group only while an overview is open; each
channel-layer send costs about as much as a listener would, so events are sent to a group
only while a websocket subscribes to it (a submission of 1,000 workloads to 1,000 projects
spent 0.1 s on sends to nobody, and building the payloads nobody would read cost as much).
The console consumer counts its subscriptions here (in the shared cache); the publisher
reads the counts in one round trip per batch: one key, the count of every subscription,
while nobody listens to any (a load of thousands of submissions asks nothing more), the
counts of the batch's groups otherwise. A user's own group and a simulation's are always
sent to (they carry few messages).

A consumer that dies without unsubscribing leaves its count up: its groups' events are
then sent for nothing, which costs a little but never loses one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.redis import RedisCache

CLUSTER_GROUP = "cluster"
WATCHED_PREFIXES = ("workload-", "project-", "pool-")


def is_watched_kind(group: str) -> bool:
    """Whether `group` is sent to only while someone listens (the cluster's, a pool's, a
    project's or a workload's group)."""
    return group == CLUSTER_GROUP or group.startswith(WATCHED_PREFIXES)


def _key(group: str) -> str:
    return f"{settings.SCHEDULER_KEY_PREFIX}:listeners:{group}"


def _any_key() -> str:
    """The count of every subscription to a watched group."""
    return f"{settings.SCHEDULER_KEY_PREFIX}:listeners-any"


async def awatch(group: str) -> tuple[str, ...]:
    """A websocket joins `group`: count it before it joins, so no event is skipped.
    Returns the keys counted, for `aunwatch`: a websocket takes back exactly the counts
    it added, whatever the settings say by then (tests change the key prefix)."""
    if not is_watched_kind(group):
        return ()
    keys = (_key(group), _any_key())
    await sync_to_async(_counters().add)(keys)
    return keys


async def aunwatch(keys: tuple[str, ...]) -> None:
    """A websocket left the group whose counts `awatch` gave it."""
    if keys:
        await sync_to_async(_counters().take_back)(*keys)


class _CacheCounters:
    """The counts in any Django cache, each change under a lock of this process (the only
    one that sees a local-memory cache)."""

    lock = threading.Lock()

    def add(self, keys: tuple[str, ...]) -> None:
        with self.lock:
            for key in keys:
                cache.add(key, 0, timeout=None)
                cache.incr(key)

    def take_back(self, group_key: str, any_key: str) -> None:
        with self.lock:
            try:
                if cache.decr(group_key) <= 0:
                    cache.delete(group_key)
                cache.decr(any_key)
            except ValueError:  # never counted (or the cache was flushed): nothing to undo
                pass


class _RedisCounters:
    """The counts in Redis, each change one atomic step whatever other processes do: a
    group's count that reaches 0 is deleted in the same step (deleted after another
    websocket's increment, it would lose that websocket's count); the total stays, at 0
    too. A count never made (the cache was flushed) is left alone."""

    TAKE_BACK = """
    if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('DECR', KEYS[1]) <= 0 then
        redis.call('DEL', KEYS[1])
    end
    if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DECR', KEYS[2]) end
    return 0
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def add(self, keys: tuple[str, ...]) -> None:
        pipe = self.client.pipeline()
        for key in keys:
            pipe.incr(cache.make_and_validate_key(key))  # made at 0 when missing
        pipe.execute()

    def take_back(self, group_key: str, any_key: str) -> None:
        names = [cache.make_and_validate_key(k) for k in (group_key, any_key)]
        self.client.eval(self.TAKE_BACK, 2, *names)


def _counters() -> _CacheCounters | _RedisCounters:
    backend = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(backend, RedisCache):  # Django's own Redis cache: its client, for scripts
        return _RedisCounters(backend._cache.get_client(write=True))
    return _CacheCounters()


def listened(groups: Iterable[str]) -> set[str]:
    """The groups among `groups` worth sending to: every group that is not watched, and
    the watched ones someone listens to (one cache round trip, two while anyone listens
    to any)."""
    groups = set(groups)
    watched = [g for g in groups if is_watched_kind(g)]
    if not watched:
        return groups
    if (cache.get(_any_key()) or 0) <= 0:
        return groups - set(watched)
    counts = cache.get_many([_key(g) for g in watched])
    silent = {g for g in watched if (counts.get(_key(g)) or 0) <= 0}
    return groups - silent
