"""A pytest plugin: a run that has finished its tests ends, whatever a test left running.

Python joins every non-daemon thread at exit (the workers of each ThreadPoolExecutor, and so
the event loop asgiref's async_to_sync runs in one). A test that left such a thread blocked,
say an event loop whose last task ignores its cancellation, kept the process alive after
the summary was printed, until CI killed it. Once the session has finished, a daemon thread
waits FAIRWAY_TEST_EXIT_GRACE seconds (60 by default); if the process is still alive then,
it prints what each thread is doing and exits with a failure.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time

import pytest

DEFAULT_GRACE = 60.0
_STATUS = pytest.StashKey[int]()


def exit_grace() -> float:
    return float(os.environ.get("FAIRWAY_TEST_EXIT_GRACE", DEFAULT_GRACE))


def left_running() -> list[threading.Thread]:
    """Non-daemon threads besides the main one and this watchdog: what Python waits for."""
    current, main = threading.current_thread(), threading.main_thread()
    return [
        thread
        for thread in threading.enumerate()
        if thread not in (current, main) and not thread.daemon and thread.is_alive()
    ]


def _watch(grace: float, status: int) -> None:
    time.sleep(grace)
    names = ", ".join(thread.name for thread in left_running()) or "none"
    sys.stdout.flush()
    sys.stderr.write(
        f"\n[tests] the run has not exited {grace:g} s after its last test; threads still"
        f" running: {names}. A test left them blocked. Their stacks:\n"
    )
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(status or 1)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    status = config.stash.get(_STATUS, 1)
    watchdog = threading.Thread(
        target=_watch, args=(exit_grace(), status), name="exit-watchdog", daemon=True
    )
    watchdog.start()
