"""Which groups are sent to: counts of the websockets listening (live_events.watched_groups)."""

from __future__ import annotations

import uuid

from asgiref.sync import async_to_sync

from scheduler_core.live_events import watched_groups


def test_a_group_is_listened_to_from_its_first_websocket_to_its_last(settings):
    settings.SCHEDULER_KEY_PREFIX = f"watch-{uuid.uuid4().hex[:8]}"
    assert watched_groups.listened({"cluster", "user-3"}) == {"user-3"}  # always sent
    first = async_to_sync(watched_groups.awatch)("cluster")
    second = async_to_sync(watched_groups.awatch)("cluster")
    async_to_sync(watched_groups.aunwatch)(first)
    assert watched_groups.listened({"cluster", "project-1"}) == {"cluster"}
    async_to_sync(watched_groups.aunwatch)(second)
    assert watched_groups.listened({"cluster", "project-1"}) == set()


def test_a_websocket_takes_back_only_the_counts_it_added(settings):
    """One that leaves after the key prefix changed (a test's teardown running into the
    next test) leaves the new prefix's listeners counted."""
    settings.SCHEDULER_KEY_PREFIX = f"watch-{uuid.uuid4().hex[:8]}"
    old = async_to_sync(watched_groups.awatch)("cluster")
    settings.SCHEDULER_KEY_PREFIX = f"watch-{uuid.uuid4().hex[:8]}"
    async_to_sync(watched_groups.awatch)("cluster")
    async_to_sync(watched_groups.aunwatch)(old)
    assert watched_groups.listened({"cluster"}) == {"cluster"}
