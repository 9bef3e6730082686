"""Which groups are sent to: counts of the websockets listening (live_events.watched_groups)."""

from __future__ import annotations

import threading
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


def leave_and_join_at_once(leaving: tuple[str, ...]) -> tuple[str, ...]:
    """One websocket leaves "cluster" while another joins it, from two threads started
    together; returns the keys the one that joined counted."""
    start = threading.Barrier(2)
    joined: list[tuple[str, ...]] = []

    def leave() -> None:
        start.wait()
        async_to_sync(watched_groups.aunwatch)(leaving)

    def join() -> None:
        start.wait()
        joined.append(async_to_sync(watched_groups.awatch)("cluster"))

    threads = [threading.Thread(target=leave), threading.Thread(target=join)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return joined[0]


def test_a_page_left_while_the_next_one_joins_keeps_the_group_listened(settings):
    """A browser going from one page to the next: the old page's websocket leaves a group
    while the new page's joins it, at the same moment (two coroutines of the web process,
    or two processes). However their steps interleave, the new one stays counted: with a
    count that reached 0 deleted after the new one added itself, the group would look
    unwatched and its events would never reach the new page."""
    settings.SCHEDULER_KEY_PREFIX = f"watch-{uuid.uuid4().hex[:8]}"
    current = async_to_sync(watched_groups.awatch)("cluster")
    for _ in range(150):
        current = leave_and_join_at_once(current)
        assert watched_groups.listened({"cluster"}) == {"cluster"}
    async_to_sync(watched_groups.aunwatch)(current)
    assert watched_groups.listened({"cluster"}) == set()
