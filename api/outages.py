"""503 with Retry-After, never 500, when Redis or the database is unreachable.

A request that cannot be served because a backing service is down (scheduler_core.outages)
answers `503 Service Unavailable` with `Retry-After`: JSON in the API's one error shape
(`{"error": "service_unavailable", "detail": ...}`, from the API's exception handler) and a
plain page everywhere else (the console, the admin: `OutageMiddleware`). A write that was
saved before the outage showed up answers its normal success instead: what it could not do
afterwards (ask for a cycle, push live events) is done later by the beat and by browsers
resyncing.
"""

from __future__ import annotations

import logging

from django.http import HttpResponse
from rest_framework import status
from rest_framework.response import Response

from scheduler_core.outages import DATABASE_OUTAGES, OUTAGES, RETRY_AFTER_SECONDS

logger = logging.getLogger(__name__)


def _unavailable(exc: Exception) -> tuple[str, dict[str, str]]:
    """The sentence for a person and the headers of a 503 for `exc`."""
    service = "the database" if isinstance(exc, DATABASE_OUTAGES) else "Redis"
    logger.warning("503: %s is unreachable (%s: %s)", service, type(exc).__name__, exc)
    detail = (
        f"a service Fairway needs ({service}) is unreachable; "
        f"try again in {RETRY_AFTER_SECONDS} seconds"
    )
    return detail, {"Retry-After": str(RETRY_AFTER_SECONDS)}


def outage_response(exc: Exception) -> Response | None:
    """The API's 503 for an outage, or None when `exc` is not one."""
    if not isinstance(exc, OUTAGES):
        return None
    detail, headers = _unavailable(exc)
    return Response(
        {"error": "service_unavailable", "detail": detail},  # api.exceptions' error shape
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers=headers,
    )


class OutageMiddleware:
    """A plain 503 page for views outside the API (console pages, the admin)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OUTAGES):
            return None
        detail, headers = _unavailable(exception)
        return HttpResponse(
            f"Service unavailable: {detail}.\n",
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            content_type="text/plain; charset=utf-8",
            headers=headers,
        )
