"""Pagination: limit/offset for collections, a cursor for the event stream.

Bad paging parameters are a 400 naming the parameter, not silently replaced by defaults.
"""

from __future__ import annotations

from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError

MAX_LIMIT = 500


def _non_negative_int(request, name: str, *, minimum: int, maximum: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: [f"must be a whole number, got {raw[:40]!r}"]}) from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ValidationError({name: [f"must be at least {minimum}{upper}, got {value}"]})
    return value


PAGE_FIELD_DESCRIPTIONS = {
    "count": "Items in the whole collection (after filters).",
    "next": "URL of the next page (null on the last page).",
    "previous": "URL of the previous page (null on the first page).",
    "results": "The items on this page.",
}


def _describe(schema: dict) -> dict:
    for name, prop in schema.get("properties", {}).items():
        prop.setdefault("description", PAGE_FIELD_DESCRIPTIONS.get(name, name))
    return schema


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    """`?limit=&offset=`; 50 per page by default, at most 500."""

    max_limit = MAX_LIMIT

    def get_limit(self, request):
        value = _non_negative_int(request, self.limit_query_param, minimum=1, maximum=MAX_LIMIT)
        return self.default_limit if value is None else value

    def get_offset(self, request):
        value = _non_negative_int(request, self.offset_query_param, minimum=0, maximum=None)
        return value or 0

    def paginate_queryset(self, queryset, request, view=None):
        """The page first, then the count only when the page does not tell it: a page
        with fewer items than the limit is the last one (a list that fits on one page,
        what most `fairway top` refreshes read, costs no COUNT)."""
        self.request = request
        self.limit = self.get_limit(request)
        self.offset = self.get_offset(request)
        page = list(queryset[self.offset : self.offset + self.limit])
        if (0 < len(page) < self.limit) or (not page and self.offset == 0):
            self.count = self.offset + len(page)  # the last page, or an empty list
        else:
            self.count = self.get_count(queryset)
        if self.count > self.limit and self.template is not None:
            self.display_page_controls = True
        return page

    def get_paginated_response_schema(self, schema):
        return _describe(super().get_paginated_response_schema(schema))

    def get_schema_operation_parameters(self, view):
        params = super().get_schema_operation_parameters(view)
        for param in params:
            param["schema"]["minimum"] = 1 if param["name"] == self.limit_query_param else 0
            if param["name"] == self.limit_query_param:
                param["schema"]["maximum"] = MAX_LIMIT
                param["description"] = f"Items per page (default 50, at most {MAX_LIMIT})."
            else:
                param["description"] = "Index of the first item to return."
        return params


class EventCursorPagination(pagination.CursorPagination):
    """Newest first, stable under inserts: follow `next` to page back in time."""

    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = MAX_LIMIT
    invalid_cursor_message = "invalid cursor: use the `next` or `previous` link as given"

    def get_page_size(self, request):
        value = _non_negative_int(request, "limit", minimum=1, maximum=MAX_LIMIT)
        return self.page_size if value is None else value

    def decode_cursor(self, request):
        try:
            return super().decode_cursor(request)
        except NotFound as exc:  # a garbled cursor is bad input: say 400
            raise ValidationError({"cursor": [self.invalid_cursor_message]}) from exc

    def get_paginated_response_schema(self, schema):
        return _describe(super().get_paginated_response_schema(schema))

    def get_schema_operation_parameters(self, view):
        params = super().get_schema_operation_parameters(view)
        for param in params:
            if param["name"] == "limit":
                param["schema"].update({"minimum": 1, "maximum": MAX_LIMIT})
                param["description"] = f"Events per page (default 50, at most {MAX_LIMIT})."
            elif param["name"] == "cursor":
                param["description"] = "Opaque position from a previous page's next/previous link."
        return params
