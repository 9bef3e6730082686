"""The PostgreSQL cursor of Fairway's connections: parameters bound by the server, so that
psycopg can prepare the statements a connection runs again and again (settings:
DB_PREPARED_STATEMENTS).

Django's default cursor writes every parameter into the SQL text on the client, which
PostgreSQL then parses and plans at every run; planning the workload list's page cost it
more than running it. A server-bound statement is sent with its parameters apart and,
after `prepare_threshold` runs on one connection, prepared: parsed once, and planned once
as soon as a generic plan serves as well as a fresh one. The protocol carries at most
65,535 parameters per statement, where Django's default cursor has no limit (`pk__in` of
a long list, a prefetch over a long queryset): such a statement is sent with its values
written into it, as the default cursor sends every statement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from psycopg import ClientCursor

if TYPE_CHECKING:  # Django defines its cursors only where psycopg 3 is installed
    from psycopg import Cursor as ServerBindingCursor
    from psycopg.abc import Params
    from psycopg.abc import QueryNoTemplate as Query
else:
    from django.db.backends.postgresql.base import ServerBindingCursor

MAX_BOUND_PARAMETERS = 65_535  # the protocol's field is 16 bits


class PreparingCursor(ServerBindingCursor):
    """Django's server-binding cursor, which falls back to client-side binding for a
    statement with more parameters than the protocol carries."""

    def execute(  # type: ignore[override]  # psycopg's t-string overload: not Django's
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        if params is not None and len(params) > MAX_BOUND_PARAMETERS:
            query, params = ClientCursor(self.connection).mogrify(query, params), None
        return super().execute(query, params, prepare=prepare, binary=binary)
