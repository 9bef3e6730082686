"""`manage.py loadtest` run twice in a row, for real (PostgreSQL, Redis, its own worker),
at a small scale: the second run is scheduled as promptly as the first.

Both runs once shared the trigger keys: the first left its "task queued" mark (a task its
stopped worker never took, on that run's queue), so for the mark's 30 s no request of the
second run enqueued a task for the second run's worker, and the baseline's drain went
from 72 s to 92 s on every run but the first.
"""

from __future__ import annotations

import io
import re

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connection

from tests.loop.workers import worker_database_url

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres_and_redis():
    if connection.vendor != "postgresql" or not django_settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis (run with DATABASE_URL and REDIS_URL)")


def _drain_seconds(settings) -> float:
    # the run sets these on the settings: the fixture puts them back afterwards
    settings.SCHEDULER_CYCLE_QUEUE = settings.SCHEDULER_CYCLE_QUEUE
    settings.SCHEDULER_KEY_PREFIX = settings.SCHEDULER_KEY_PREFIX
    settings.SCHEDULER_AUTORUN = True
    out = io.StringIO()
    call_command("loadtest", "--scale", "0.01", "--timeout", "60", stdout=out)
    found = re.search(r"wall time to drain:\s+([0-9.]+) s", out.getvalue())
    assert found, out.getvalue()
    return float(found.group(1))


def test_a_second_run_right_after_the_first_drains_as_promptly(settings, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", worker_database_url())  # the worker's: this test's
    first = _drain_seconds(settings)
    second = _drain_seconds(settings)
    # 180 workloads arriving over 0.4 s, each at most 1 s long
    assert first < 10 and second < 10, (first, second)
