"""The worker keeps its database connection from one task to the next while
DB_CONN_MAX_AGE allows (`manage.py run` gives it WORKER_DB_CONN_MAX_AGE), and drops one
that is too old or broke, as Django does around a request."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connection

from config.celery import app

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # SQLite's test database lives in its one connection, which Django never closes
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL"),
]


class _Task:
    """What the signals' receivers read of a task a worker runs (not eagerly)."""

    request = SimpleNamespace(is_eager=False)


def _a_task_runs() -> None:
    task = _Task()
    task_prerun.send(sender=task, task=task, task_id="t", args=(), kwargs={})
    connection.ensure_connection()
    task_postrun.send(sender=task, task=task, task_id="t", args=(), kwargs={})


@pytest.fixture
def max_age():
    """Set the connection's DB_CONN_MAX_AGE (read when it connects)."""
    before = connection.settings_dict["CONN_MAX_AGE"]

    def _set(seconds: int) -> None:
        connection.close()
        connection.settings_dict["CONN_MAX_AGE"] = seconds
        connection.ensure_connection()

    yield _set
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = before


def test_celerys_own_close_after_every_task_is_lifted():
    assert app.conf.get("CELERY_DB_REUSE_MAX") >= 1_000_000


def test_a_kept_connection_serves_the_next_task(max_age):
    max_age(60)
    first = connection.connection
    _a_task_runs()
    _a_task_runs()
    assert connection.connection is first


def test_without_an_age_each_task_gets_a_new_connection(max_age):
    max_age(0)
    first = connection.connection
    _a_task_runs()
    assert connection.connection is not first


def test_a_broken_connection_is_not_kept(max_age):
    max_age(60)
    first = connection.connection
    connection.errors_occurred = True
    first.close()  # as when the database restarted under it
    _a_task_runs()
    assert connection.connection is not first and connection.is_usable()
