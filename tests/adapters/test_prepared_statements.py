"""On PostgreSQL a connection prepares the statements it runs again and again (the server
binds the parameters; psycopg prepares a statement after PREPARE_THRESHOLD runs), so the
server plans each once per connection; DB_PREPARED_STATEMENTS=false turns that off for a
pooler that cannot keep prepared statements. A statement with more parameters than the
protocol carries still runs, as it did with Django's default cursor."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

from scheduler_core.models import Workload
from tests import factories as f

SHOW_OPTIONS = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps(settings.DATABASES['default']['OPTIONS'], default=str))"
)


def _options(**env: str) -> dict:
    """The database OPTIONS a process gets on a PostgreSQL DATABASE_URL (nothing connects)."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "postgres://fairway@127.0.0.1:1/fairway",
        **env,
    }
    out = subprocess.run(
        [sys.executable, "-c", SHOW_OPTIONS],
        env=environment,
        cwd=settings.BASE_DIR,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_postgresql_connections_prepare_repeated_statements_unless_turned_off():
    on = _options()
    off = _options(DB_PREPARED_STATEMENTS="false")

    assert on["server_side_binding"] is True
    assert on["prepare_threshold"] == settings.PREPARE_THRESHOLD
    assert on["cursor_factory"].endswith("PreparingCursor'>")
    assert not {"server_side_binding", "prepare_threshold", "cursor_factory"} & set(off)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's prepared statements")
def test_a_query_run_again_on_one_connection_is_planned_once():
    project = f.project()
    mine = [f.workload(project, name=f"w{i}") for i in range(3)]
    for _ in range(settings.PREPARE_THRESHOLD + 2):
        # the same statement each time, with other parameters
        names = set(
            Workload.objects.filter(pk__any_of=[w.pk for w in mine]).values_list("name", flat=True)
        )
        assert names == {"w0", "w1", "w2"}

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%FROM "scheduler_core_workload"%= ANY(%'],
        )
        (prepared,) = cursor.fetchone()
    assert prepared >= 1


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's parameter limit")
def test_a_statement_with_more_parameters_than_the_protocol_carries_still_runs():
    project = f.project()
    mine = [f.workload(project, name=f"w{i}") for i in range(2)]
    keys = [*range(-70_000, 0), mine[0].pk]  # 70,001 parameters; the protocol carries 65,535

    assert Workload.objects.filter(pk__in=keys).count() == 1
    assert list(Workload.objects.filter(pk__in=keys, name__contains="%'").values("pk")) == []
