"""Workers publish events from a background thread: in order, all of them, never failing
the caller."""

import threading

from django.conf import settings

from scheduler_core.live_events import publisher as event_publisher


def test_batches_are_sent_in_order_off_the_callers_thread():
    sent, threads = [], set()

    def send(messages):
        threads.add(threading.current_thread().name)
        sent.extend(messages)

    for i in range(50):
        event_publisher.publish([("cluster", {"n": i}), ("project-1", {"n": i})], send)
    event_publisher.flush()
    assert [m["n"] for _, m in sent] == [i for i in range(50) for _ in (0, 1)]
    assert threads == {"fairway-events"}


def test_a_failing_send_does_not_stop_the_publisher(caplog):
    sent = []

    def broken(messages):
        raise ConnectionError("redis went away")

    event_publisher.publish([("cluster", {"n": 1})], broken)
    event_publisher.publish([("cluster", {"n": 2})], sent.extend)
    event_publisher.flush()
    assert sent == [("cluster", {"n": 2})]
    assert "could not publish 1 channel messages" in caplog.text


def test_workers_turn_it_on_for_themselves_and_their_children(monkeypatch):
    monkeypatch.delenv(event_publisher.ENV_FLAG, raising=False)
    assert not event_publisher.enabled()
    from config.celery import _publish_events_in_background

    _publish_events_in_background()
    assert event_publisher.enabled()
    monkeypatch.delenv(event_publisher.ENV_FLAG)


def test_the_publisher_thread_sends_through_the_channel_layer_on_one_loop_of_its_own():
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from scheduler_core.live_events.recording import send_now

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)("user-7", channel)
    loops = []

    def send(messages):
        loops.append(event_publisher.thread_loop())
        send_now(messages)

    for i in range(3):  # one batch at a time: three rounds of sends
        event_publisher.publish([("user-7", {"type": "access.changed", "n": i})], send)
        event_publisher.flush()

    async def receive_three():
        return [(await layer.receive(channel))["n"] for _ in range(3)]

    assert async_to_sync(receive_three)() == [0, 1, 2]
    assert loops[0] is not None and all(loop is loops[0] for loop in loops)


def test_a_worker_keeps_startup_objects_out_of_full_collections_and_collects_less_often():
    import gc

    from config.celery import _freeze_startup_objects

    threshold = gc.get_threshold()
    try:
        _freeze_startup_objects()
        assert gc.get_freeze_count() > 10_000
        assert gc.get_threshold() == (settings.WORKER_GC_THRESHOLD, *threshold[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
