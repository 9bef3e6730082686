"""Fast multi-row UPDATEs for the scheduling hot path.

Django's `bulk_update` builds a CASE WHEN expression per row and field; resolving those
expressions costs seconds for a few thousand rows. A cycle updates many rows with different
values, so here every row is one parameterised UPDATE sent with `executemany`, which the
database drivers pipeline (psycopg) or run in a tight loop (sqlite3).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, models


def update_rows(objs: Sequence[models.Model], fields: Sequence[str]) -> int:
    """Write `fields` of every object in `objs` (all of one model) by primary key."""
    if not objs:
        return 0
    model = type(objs[0])
    meta = model._meta
    concrete = [meta.get_field(name) for name in fields]
    qn = connection.ops.quote_name
    assignments = ", ".join(f"{qn(f.column)} = %s" for f in concrete)
    sql = f"UPDATE {qn(meta.db_table)} SET {assignments} WHERE {qn(meta.pk.column)} = %s"
    params = [
        [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in concrete] + [obj.pk]
        for obj in objs
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
    return len(params)
