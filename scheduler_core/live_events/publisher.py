"""Publishing events from a background thread, for the worker and the web processes.

Sending one cycle's events through the channel layer (several group messages per event) can
take longer than the cycle itself. In a Celery worker the next cycle should not wait for
that, nor a request in a web process for its submission's or report's events, so there the
messages go into an in-process outbox that one thread drains in order. Tests and commands
publish synchronously. The worker and each web process (config/web_process.py) turn this on
through the environment (inherited by forked children); the thread starts lazily in each
process that publishes, and the outbox is flushed (a few seconds at most) at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

ENV_FLAG = "FAIRWAY_PUBLISH_IN_BACKGROUND"
FLUSH_SECONDS = 5.0

Messages = list[tuple[str, dict[str, Any]]]


def enable() -> None:
    """Publish from a background thread in this process and the ones it forks."""
    os.environ[ENV_FLAG] = "1"


def enabled() -> bool:
    return os.environ.get(ENV_FLAG) == "1"


Send = Callable[[Messages], None]


class _Outbox:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.items: queue.Queue[tuple[Send, Messages]] = queue.Queue()
        self.thread = threading.Thread(target=self._drain, name="fairway-events", daemon=True)
        self.thread.start()
        atexit.register(self.flush)

    def put(self, send: Send, messages: Messages) -> None:
        self.items.put((send, messages))

    def _drain(self) -> None:
        # One event loop for the thread's life: the channel layer keeps its Redis
        # connections per loop, and a fresh loop per batch (what async_to_sync does) costs
        # eight times the CPU of the sends themselves.
        _thread.loop = asyncio.new_event_loop()
        while True:
            send, batch = self.items.get()
            taken = 1
            # What piled up meanwhile for the same sender goes out in the same round.
            while not self.items.empty():
                next_send, more = self.items.queue[0]
                if next_send is not send:
                    break
                self.items.get_nowait()
                batch = batch + more
                taken += 1
            try:
                send(batch)
            except Exception:  # the events are stored; browsers resync on reconnect
                logger.exception("could not publish %d channel messages", len(batch))
            finally:
                for _ in range(taken):
                    self.items.task_done()

    def flush(self, timeout: float = FLUSH_SECONDS) -> None:
        """Wait (bounded) until everything put so far has been sent."""
        deadline = time.monotonic() + timeout
        while self.items.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)


_thread = threading.local()


def thread_loop() -> asyncio.AbstractEventLoop | None:
    """The publisher thread's own event loop, when called from that thread."""
    return getattr(_thread, "loop", None)


_outbox: _Outbox | None = None
_lock = threading.Lock()


def publish(messages: Messages, send: Send) -> None:
    """Hand `messages` to this process's publisher thread (started on first use), which
    calls `send` with them after everything handed over before."""
    global _outbox
    with _lock:
        if _outbox is None or _outbox.pid != os.getpid():  # new process (fork): new thread
            _outbox = _Outbox()
        outbox = _outbox
    outbox.put(send, messages)


def flush(timeout: float = FLUSH_SECONDS) -> None:
    """Wait until this process's outbox is empty (tests, shutdown)."""
    if _outbox is not None and _outbox.pid == os.getpid():
        _outbox.flush(timeout)
