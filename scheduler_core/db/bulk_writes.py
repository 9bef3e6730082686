"""Fast multi-row INSERTs, UPDATEs and DELETEs for the scheduling hot path.

Django's `bulk_update` builds a CASE WHEN expression per row and field; resolving those
expressions costs seconds for a few thousand rows, and `bulk_create` prepares every value
of every model instance. A cycle writes many rows with different values, so here, on
PostgreSQL, rows are written by one `UPDATE ... FROM unnest(...)` or `INSERT ... SELECT
FROM unnest(...)` statement per 5,000 rows: one array parameter per column (an INSERT's
column whose rows all agree goes as one value), sent in binary through a cursor that binds
its parameters on the server (Django's cursors quote every array element into the SQL
text, which costs more than the statement itself). Elsewhere
UPDATEs are an `executemany` (sqlite3 runs it in a tight loop) and INSERTs `bulk_create`.
These statements bypass Django's cursor wrappers (query logging and counting).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import psycopg
from django.db import connection, models
from django.db.models.base import ModelState

if TYPE_CHECKING:
    from django.db.models.options import Options

ROWS_PER_STATEMENT = 5000
M = TypeVar("M", bound=models.Model)


# Fields whose Python values the database driver takes as they are (no preparation).
PLAIN_FIELDS: tuple[type[models.Field[Any, Any]], ...] = (
    models.IntegerField, models.FloatField, models.CharField, models.TextField,
    models.BooleanField,
)  # fmt: skip


def update_rows(
    objs: Sequence[Any], fields: Sequence[str], *, model: type[models.Model] | None = None
) -> int:
    """Write `fields` of every object in `objs` by primary key: instances of one model,
    or, given that `model`, any objects with its fields' attributes and a `pk`.
    Date-times must be aware (as timezone.now() gives): on PostgreSQL they are sent as
    they are."""
    if not objs:
        return 0
    meta = (model or type(objs[0]))._meta
    concrete = model_fields(meta, fields)
    plain = PLAIN_FIELDS
    if connection.vendor == "postgresql":
        plain = (*plain, models.DateTimeField)
    prepared = [not isinstance(f, plain) for f in concrete]
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


def _update_from_arrays(
    meta: Options[Any], concrete: list[models.Field[Any, Any]], rows: list[list[Any]]
) -> None:
    """One UPDATE ... FROM unnest(<one array per column>) per ROWS_PER_STATEMENT rows: the
    statement stays small however many rows it writes."""
    table, pk = connection.ops.quote_name(meta.db_table), column_name(meta.pk)
    columns = [column_name(f) for f in concrete]
    casts = [column_type(meta.pk)] + [column_type(f) for f in concrete]
    arrays = ", ".join(f"%b::{cast}[]" for cast in casts)
    assignments = ", ".join(f"{c} = v.{c}" for c in columns)
    sql = (
        f"UPDATE {table} AS t SET {assignments} FROM unnest({arrays}) "
        f"AS v({pk}, {', '.join(columns)}) WHERE t.{pk} = v.{pk}"
    )
    with binary_cursor() as cursor:
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start : start + ROWS_PER_STATEMENT]
            cursor.execute(
                sql, [list(column) for column in zip(*chunk, strict=True)], prepare=False
            )


def insert_rows(
    model: type[models.Model], fields: Sequence[str], rows: Sequence[Sequence[Any]]
) -> list[int]:
    """Insert `rows` (Python values of `fields`, in that order; foreign keys by their
    `..._id` attribute) into `model`'s table; returns their primary keys, in order."""
    if not rows:
        return []
    meta = model._meta
    concrete = model_fields(meta, fields)
    if connection.vendor != "postgresql":
        objs = model._default_manager.bulk_create(
            [model(**{f.attname: v for f, v in zip(concrete, row, strict=True)}) for row in rows],
            batch_size=500,
        )
        return [obj.pk for obj in objs]
    is_json = [isinstance(f, models.JSONField) for f in concrete]
    pks: list[int] = []
    with binary_cursor() as cursor:
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            values = [
                [_json_text(v) for v in column] if js else list(column)
                for column, js in zip(
                    zip(*rows[start : start + ROWS_PER_STATEMENT], strict=True),
                    is_json,
                    strict=True,
                )
            ]
            sql, params = _insert_statement(meta, concrete, values)
            with connection.wrap_database_errors:  # Django's IntegrityError, as elsewhere
                cursor.execute(sql, params, prepare=False)
            # rows come back in the order of the arrays (bulk_create relies on this too)
            pks.extend(pk for (pk,) in cursor.fetchall())
    return pks


def _insert_statement(
    meta: Options[Any], concrete: list[models.Field[Any, Any]], columns: list[list[Any]]
) -> tuple[str, list[Any]]:
    """`INSERT ... SELECT ... FROM unnest(...)` of the columns' values: a column whose
    values are all the same (most of a submission's: its status, times, defaults) goes
    as one value, not an array of copies (sending arrays costs most of the client's time)."""
    constant = [column.count(column[0]) == len(column) for column in columns]
    if all(constant):
        constant[0] = False  # unnest needs an array to give the number of rows
    names = [column_name(f) for f in concrete]
    picks, arrays, params, array_params = [], [], [], []
    for name, field, column, one in zip(names, concrete, columns, constant, strict=True):
        if one:
            picks.append(f"%b::{column_type(field)}")
            params.append(column[0])
        else:
            picks.append(f"v.{name}")
            arrays.append(f"%b::{column_type(field)}[]")
            array_params.append(column)
    unnested = [n for n, one in zip(names, constant, strict=True) if not one]
    sql = (
        f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({', '.join(names)}) "
        f"SELECT {', '.join(picks)} FROM unnest({', '.join(arrays)}) AS v({', '.join(unnested)}) "
        f"RETURNING {column_name(meta.pk)}"
    )
    return sql, params + array_params


def _json_text(value: Any) -> str:
    """A JSON field's value as JSON text (orjson: a tenth of json.dumps' time; keys that
    are not strings become strings, as json.dumps makes them)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def insert_objects(objs: Sequence[models.Model]) -> None:
    """Insert new instances of one model (every concrete field but the primary key, with
    `auto_now` fields set as `save()` sets them) and give each its primary key; on
    PostgreSQL through `insert_rows`, without `bulk_create`'s per-value preparation."""
    if not objs:
        return
    model = type(objs[0])
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(objs)
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            value = f.pre_save(objs[0], add=True)
            for obj in objs:
                setattr(obj, f.attname, value)
    plain = (*PLAIN_FIELDS, models.DateTimeField, models.JSONField, models.ForeignKey)
    prepared = {f.attname for f in fields if not isinstance(f, plain)}
    values = operator.attrgetter(*(f.attname for f in fields))
    rows: list[Sequence[Any]] = [values(obj) for obj in objs]
    if len(fields) == 1:  # attrgetter of one name gives the value, not a tuple
        rows = [(value,) for value in rows]
    if prepared:
        rows = [
            [
                f.get_db_prep_save(v, connection) if f.attname in prepared else v
                for f, v in zip(fields, row, strict=True)
            ]
            for row in rows
        ]
    pks = insert_rows(model, [f.name for f in fields], rows)
    for obj, pk in zip(objs, pks, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias


def copy_unsaved(template: M, **values: Any) -> M:
    """A new unsaved instance with `template`'s field values (and the related objects it
    holds), then `values` set (by field or attribute name; a foreign key by its object).
    `Model.__init__` resolves every keyword of every instance (18 us for a workload); a
    bulk submission of thousands of one shape copies one built instance instead (2 us).
    Mutable values (JSON fields) of the template are shared: give each copy its own in
    `values`."""
    obj = type(template).__new__(type(template))
    obj.__dict__.update(template.__dict__)
    obj._state = ModelState()
    obj._state.fields_cache = template._state.fields_cache.copy()  # related objects it holds
    for name, value in values.items():
        setattr(obj, name, value)
    return obj


def delete_rows(model: type[models.Model], pks: Sequence[int]) -> None:
    """Delete rows of `model` by primary key (at most a few thousand: callers chunk) in
    set-based statements: each reverse relation that is SET_NULL is cleared with one
    UPDATE, then one DELETE. Django's `delete()` loads every row (and checks each relation
    per row) first, which costs seconds for thousands of rows. Any other `on_delete` is
    refused, so a relation added later cannot be skipped silently."""
    if not pks:
        return
    for relation in model._meta.related_objects:
        if relation.on_delete is not models.SET_NULL:  # type: ignore[attr-defined]
            raise ValueError(f"delete_rows cannot honour {relation} ({relation.on_delete})")  # type: ignore[attr-defined]
        field = relation.field
        relation.related_model._base_manager.filter(**{f"{field.name}__any_of": pks}).update(
            **{field.name: None}
        )
    # one DELETE with the keys as `__any_of` writes them; Django's own fast path for a
    # delete nothing depends on (the relations are cleared above)
    model._base_manager.filter(pk__any_of=pks)._raw_delete(connection.alias)


def model_fields(meta: Options[Any], names: Sequence[str]) -> list[models.Field[Any, Any]]:
    """The fields `names` of a model, each a column of its table."""
    fields = []
    for name in names:
        field = meta.get_field(name)
        if not isinstance(field, models.Field) or field.column is None:
            raise ValueError(f"{meta.label}.{name} is not a column")
        fields.append(field)
    return fields


def column_name(field: models.Field[Any, Any]) -> str:
    """`field`'s column name, quoted (only fields with a column get here: `model_fields`)."""
    assert field.column is not None
    return connection.ops.quote_name(field.column)


def column_type(field: models.Field[Any, Any]) -> str:
    """The type to cast an array parameter of `field`'s values to."""
    if isinstance(field, models.ForeignKey):
        db_type = field.target_field.rel_db_type(connection)
    else:
        db_type = field.db_type(connection)
    assert db_type is not None  # a field with a column has a type
    return db_type


def binary_cursor() -> psycopg.Cursor:
    """A cursor on Django's connection (same transaction) that binds parameters on the
    server, so that `%b` sends them in binary. Its statements must run with
    `prepare=False`: a prepared statement soon gets a generic plan, which does not know
    how many rows the arrays hold and, on a table that grew since it was last analysed,
    can scan it once per row (seconds instead of milliseconds)."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def _update_each(
    meta: Options[Any], concrete: list[models.Field[Any, Any]], rows: list[list[Any]]
) -> None:
    assignments = ", ".join(f"{column_name(f)} = %s" for f in concrete)
    table = connection.ops.quote_name(meta.db_table)
    sql = f"UPDATE {table} SET {assignments} WHERE {column_name(meta.pk)} = %s"
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
    if connection.vendor == "postgresql":
        with binary_cursor() as cursor:
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                chunk = rows[start : start + ROWS_PER_STATEMENT]
                cursor.execute(
                    f"UPDATE {table} AS t SET pending_reason = v.reason, "
                    "pending_reason_kind = v.kind, queue_position = v.position "
                    "FROM unnest(%b::bigint[], %b::integer[], %b::text[], %b::varchar[], "
                    "%b::integer[]) AS v(id, version, reason, kind, position) "
                    "WHERE t.id = v.id AND t.version = v.version AND t.status = 'pending'",
                    [list(column) for column in zip(*chunk, strict=True)],
                    prepare=False,
                )
        return len(rows)
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET pending_reason = %s, pending_reason_kind = %s, "
            "queue_position = %s WHERE id = %s AND version = %s AND status = 'pending'",
            [(reason, kind, position, pk, version) for pk, version, reason, kind, position in rows],
        )
    return len(rows)
