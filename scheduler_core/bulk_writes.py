"""Fast multi-row UPDATEs for the scheduling hot path.

Django's `bulk_update` builds a CASE WHEN expression per row and field; resolving those
expressions costs seconds for a few thousand rows. A cycle updates many rows with different
values, so here rows are written by primary key with one `UPDATE ... FROM unnest(...)`
statement per 5,000 rows on PostgreSQL (one array parameter per column, so the driver does
not parse thousands of placeholders), and with `executemany` of a parameterised UPDATE
elsewhere (sqlite3 runs it in a tight loop).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, models

ROWS_PER_STATEMENT = 5000


# Fields whose Python values the database driver takes as they are (no preparation).
PLAIN_FIELDS = (
    models.IntegerField, models.FloatField, models.CharField, models.TextField,
    models.BooleanField,
)  # fmt: skip


def update_rows(objs: Sequence[models.Model], fields: Sequence[str]) -> int:
    """Write `fields` of every object in `objs` (all of one model) by primary key."""
    if not objs:
        return 0
    meta = type(objs[0])._meta
    concrete = [meta.get_field(name) for name in fields]
    prepared = [not isinstance(f, PLAIN_FIELDS) for f in concrete]
    rows = [
        [obj.pk]
        + [
            f.get_db_prep_save(getattr(obj, f.attname), connection)
            if prep
            else getattr(obj, f.attname)
            for f, prep in zip(concrete, prepared, strict=True)
        ]
        for obj in objs
    ]
    if connection.vendor == "postgresql":
        _update_from_arrays(meta, concrete, rows)
    else:
        _update_each(meta, concrete, rows)
    return len(rows)


def _update_from_arrays(meta, concrete, rows) -> None:
    """One UPDATE ... FROM unnest(<one array per column>) per ROWS_PER_STATEMENT rows: the
    statement stays small however many rows it writes."""
    qn = connection.ops.quote_name
    table, pk = qn(meta.db_table), qn(meta.pk.column)
    columns = [qn(f.column) for f in concrete]
    casts = [meta.pk.db_type(connection)] + [f.db_type(connection) for f in concrete]
    arrays = ", ".join(f"%s::{cast}[]" for cast in casts)
    assignments = ", ".join(f"{c} = v.{c}" for c in columns)
    sql = (
        f"UPDATE {table} AS t SET {assignments} FROM unnest({arrays}) "
        f"AS v({pk}, {', '.join(columns)}) WHERE t.{pk} = v.{pk}"
    )
    with connection.cursor() as cursor:
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start : start + ROWS_PER_STATEMENT]
            cursor.execute(sql, [list(column) for column in zip(*chunk, strict=True)])


def _update_each(meta, concrete, rows) -> None:
    qn = connection.ops.quote_name
    assignments = ", ".join(f"{qn(f.column)} = %s" for f in concrete)
    sql = f"UPDATE {qn(meta.db_table)} SET {assignments} WHERE {qn(meta.pk.column)} = %s"
    with connection.cursor() as cursor:
        cursor.executemany(sql, [[*row[1:], row[0]] for row in rows])


def update_pending_reasons(rows: Sequence[tuple[int, int, str, str, int | None]]) -> int:
    """Write (pk, version, reason, reason kind, queue position) of pending workloads, each
    only if the workload is still pending at that version: no row locks are taken, and a
    workload a user changed meanwhile keeps their change. Returns the rows submitted."""
    if not rows:
        return 0
    qn = connection.ops.quote_name
    table = qn("scheduler_core_workload")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                chunk = rows[start : start + ROWS_PER_STATEMENT]
                cursor.execute(
                    f"UPDATE {table} AS t SET pending_reason = v.reason, "
                    "pending_reason_kind = v.kind, queue_position = v.position "
                    "FROM unnest(%s::bigint[], %s::integer[], %s::text[], %s::varchar[], "
                    "%s::integer[]) AS v(id, version, reason, kind, position) "
                    "WHERE t.id = v.id AND t.version = v.version AND t.status = 'pending'",
                    [list(column) for column in zip(*chunk, strict=True)],
                )
        else:
            cursor.executemany(
                f"UPDATE {table} SET pending_reason = %s, pending_reason_kind = %s, "
                "queue_position = %s WHERE id = %s AND version = %s AND status = 'pending'",
                [
                    (reason, kind, position, pk, version)
                    for pk, version, reason, kind, position in rows
                ],
            )
    return len(rows)
