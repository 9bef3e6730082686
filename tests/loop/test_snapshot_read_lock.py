"""On SQLite (the one-command run) the cycle's snapshot read must not hold off writers: every
other transaction there begins IMMEDIATE, taking the database's one write lock, and a
cycle that read its snapshot in one kept every submission waiting while it read (the API's
submissions under load waited up to a second)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from django.conf import settings

SCRIPT = textwrap.dedent(
    """
    import sqlite3, sys
    import django
    django.setup()
    from django.db import connection, transaction
    from scheduler_core.db.read_only import read_only_transaction

    setup = sqlite3.connect(sys.argv[1])  # Django's connection is not opened before the read
    setup.execute("CREATE TABLE t (x integer)")
    setup.close()

    def another_writer_can_write():
        other = sqlite3.connect(sys.argv[1], timeout=0)
        try:
            other.execute("INSERT INTO t VALUES (1)")
            other.commit()
            return True
        except sqlite3.OperationalError:  # database is locked
            return False
        finally:
            other.close()

    with read_only_transaction():
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM t")
            before = cursor.fetchone()[0]
        during_read = another_writer_can_write()
        with connection.cursor() as cursor:  # the snapshot holds: the new row is not seen
            cursor.execute("SELECT count(*) FROM t")
            same = cursor.fetchone()[0] == before
    with transaction.atomic():
        during_write = another_writer_can_write()
    print(during_read, same, during_write)
    """
)


def test_a_snapshot_read_on_sqlite_lets_writers_write_and_sees_one_snapshot(tmp_path):
    database = tmp_path / "fairway.sqlite3"
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "FAIRWAY_VAR_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(database)],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # a writer goes on during the read; the read's snapshot holds; a write transaction
    # still takes the lock at once
    assert done.stdout.split() == ["True", "True", "False"]
