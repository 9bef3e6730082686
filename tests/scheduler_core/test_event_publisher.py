"""Workers publish events from a background thread: in order, all of them, never failing
the caller."""

import threading

from scheduler_core import event_publisher


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
