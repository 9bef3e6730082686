"""The API's documentation pages (Swagger UI, Redoc): their assets come from
drf-spectacular-sidecar and are served here, and a Content-Security-Policy keeps the pages
from loading anything from another host at run time (Redoc's bundle shows a logo from
cdn.redoc.ly, Swagger UI may ask validator.swagger.io for a badge): the browser does not
send those requests, and the pages work without them."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse

LOCAL_ONLY = "default-src 'self' data: blob: 'unsafe-inline' 'unsafe-eval'"
"""Anything from this server (inline scripts and styles included, as the pages use them),
nothing from elsewhere."""


def local_assets_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """`view`, its answers sent with the LOCAL_ONLY policy."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = LOCAL_ONLY
        return response

    return wrapped
