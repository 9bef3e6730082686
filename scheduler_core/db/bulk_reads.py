"""Set-based reads for many keys at once (the counterpart of bulk_writes).

Django's `filter(a__in=..., b__in=...)` quotes every key into the SQL text; for a
submission of thousands of workloads that costs more than the query. On PostgreSQL the
keys go as one binary array per column (scheduler_core.db.bulk_writes' cursor).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models

from scheduler_core.db.bulk_writes import (
    ROWS_PER_STATEMENT,
    binary_cursor,
    column_name,
    column_type,
    model_fields,
)


def existing_keys(
    model: type[models.Model], fields: Sequence[str], keys: Sequence[tuple[Any, ...]]
) -> set[tuple[Any, ...]]:
    """Those of `keys` (values of `fields`, in order) that rows of `model` have."""
    if not keys:
        return set()
    concrete = model_fields(model._meta, fields)
    if connection.vendor != "postgresql":
        columns = [f.attname for f in concrete]
        rows = model._default_manager.filter(
            **{f"{c}__in": {k[i] for k in keys} for i, c in enumerate(columns)}
        ).values_list(*columns)
        return set(rows) & set(keys)
    names = [column_name(f) for f in concrete]
    arrays = ", ".join(f"%b::{column_type(f)}[]" for f in concrete)
    join = " AND ".join(f"t.{c} = k.{c}" for c in names)
    sql = (
        f"SELECT {', '.join(f't.{c}' for c in names)} FROM "
        f"{connection.ops.quote_name(model._meta.db_table)} AS t "
        f"JOIN unnest({arrays}) AS k({', '.join(names)}) ON {join}"
    )
    found: set[tuple[Any, ...]] = set()
    with binary_cursor() as cursor:
        for start in range(0, len(keys), ROWS_PER_STATEMENT):
            chunk = keys[start : start + ROWS_PER_STATEMENT]
            cursor.execute(sql, [list(c) for c in zip(*chunk, strict=True)], prepare=False)
            found.update(tuple(row) for row in cursor.fetchall())
    return found
