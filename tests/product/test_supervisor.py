"""`manage.py run` keeps every child up: one that exits is started again, with backoff, and
the others go on. The schedule with fake processes and a fake clock, then a real process."""

from __future__ import annotations

import itertools
import logging
import signal
import sys
import time

from scheduler_core.management.commands.run import (
    FIRST_BACKOFF,
    MAX_BACKOFF,
    STABLE_AFTER,
    Child,
    Supervisor,
)


class FakeProcess:
    pids = itertools.count(100)

    def __init__(self) -> None:
        self.pid = next(self.pids)
        self.returncode: int | None = None
        self.signals: list[tuple[str, int]] = []

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_supervisor() -> tuple[Supervisor, FakeClock]:
    clock = FakeClock()

    def spawn(child, env):
        return FakeProcess()

    def kill(process, signum):
        process.signals.append(("group", signum))
        process.returncode = process.returncode or -signum

    def terminate(process):
        process.signals.append(("leader", signal.SIGTERM))
        process.returncode = process.returncode or -signal.SIGTERM

    return Supervisor({}, spawn=spawn, clock=clock, kill=kill, terminate=terminate), clock


def restart_delays(supervisor, clock, child: Child, deaths: int, up: float) -> list[float]:
    """Let `child` run `up` seconds and exit, `deaths` times; the waits before each restart."""
    delays = []
    for _ in range(deaths):
        clock.now += up
        dead = child.process
        dead.returncode = 1
        supervisor.check()
        died_at = clock.now
        while child.process is dead:
            clock.now += 0.5
            supervisor.check()
        delays.append(clock.now - died_at)
    return delays


def test_a_child_that_keeps_exiting_is_restarted_with_doubling_backoff(caplog):
    supervisor, clock = fake_supervisor()
    worker = supervisor.start(Child("worker", ["celery"]))
    web = supervisor.start(Child("web-1", ["daphne"]))
    web_process = web.process
    caplog.set_level(logging.INFO)

    delays = restart_delays(supervisor, clock, worker, deaths=7, up=0.5)

    assert delays == [1, 2, 4, 8, 16, MAX_BACKOFF, MAX_BACKOFF]
    assert web.process is web_process and web_process.poll() is None  # the others go on
    assert "worker exited with code 1" in caplog.text
    assert "starting it again in 30 s" in caplog.text


def test_a_child_that_stayed_up_a_while_starts_over_at_the_first_backoff():
    supervisor, clock = fake_supervisor()
    beat = supervisor.start(Child("beat", ["celery"]))
    assert restart_delays(supervisor, clock, beat, deaths=3, up=1) == [1, 2, 4]
    assert restart_delays(supervisor, clock, beat, deaths=2, up=STABLE_AFTER) == [
        FIRST_BACKOFF,
        FIRST_BACKOFF,
    ]


def test_a_real_process_that_exits_is_started_again():
    supervisor = Supervisor({})
    child = supervisor.start(Child("short-lived", [sys.executable, "-c", "exit(3)"]))
    try:
        first = child.process
        deadline = time.monotonic() + 20
        while child.process is first and time.monotonic() < deadline:
            supervisor.check()
            time.sleep(0.1)
        assert first.returncode == 3
        assert child.process is not first, "the process was not started again"
    finally:
        supervisor.stop_all()


def test_stopping_asks_each_child_alone_then_kills_what_it_left():
    """SIGTERM to each child's own process (a Celery worker stops its pool processes
    itself, once their task is done), then SIGKILL to its group for anything left."""
    supervisor, _ = fake_supervisor()
    worker = supervisor.start(Child("worker", ["celery"]))
    web = supervisor.start(Child("web-1", ["uvicorn"]))
    supervisor.stop_all()
    for child in (worker, web):
        assert child.process.signals == [("leader", signal.SIGTERM), ("group", signal.SIGKILL)]


def test_redis_is_stopped_once_the_children_that_use_it_have_stopped():
    """A worker ending its cycle still releases its lock through Redis: Redis stops after
    it, not at the same time (it did, and the worker logged a traceback at each stop)."""
    supervisor, _ = fake_supervisor()
    order: list[str] = []
    terminate = supervisor.terminate

    def record(process):
        order.append(names[process.pid])
        terminate(process)

    supervisor.terminate = record
    redis = supervisor.start(Child("redis", ["redis-server"], serves_others=True))
    worker = supervisor.start(Child("worker", ["celery"]))
    web = supervisor.start(Child("web-1", ["uvicorn"]))
    names = {c.process.pid: c.name for c in (redis, worker, web)}
    supervisor.stop_all()
    assert order == ["web-1", "worker", "redis"]
