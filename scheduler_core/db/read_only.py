"""A transaction that only reads, each database's cheapest consistent one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction


@contextmanager
def read_only_transaction() -> Iterator[None]:
    """Every query inside sees the same snapshot of the database.

    On PostgreSQL: REPEATABLE READ, READ ONLY. On SQLite: a DEFERRED transaction, which in
    WAL mode reads one snapshot without taking the write lock; every other transaction
    there begins IMMEDIATE (settings: it takes the lock at once, so that a writer never
    fails upgrading it), and a long read in one would hold off every writer, a user's
    submission included, for as long as it reads. Inside a transaction already (tests),
    the queries simply join it."""
    fresh = not connection.in_atomic_block
    if fresh and connection.vendor == "sqlite":
        connection.ensure_connection()  # (the wrapper reads its mode when it connects)
        sqlite: Any = connection  # Django's SQLite wrapper: its BEGIN's mode
        mode = sqlite.transaction_mode
        sqlite.transaction_mode = "DEFERRED"
        try:
            with transaction.atomic():
                sqlite.transaction_mode = mode  # only this BEGIN is deferred
                yield
        finally:
            sqlite.transaction_mode = mode
        return
    with transaction.atomic():
        if fresh and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield
