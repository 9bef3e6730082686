"""One error shape for every API failure.

Every error response is JSON of the form::

    {"error": "validation_failed",
     "detail": "limit_gpus: the limit (2) must be at least the deserved quota (4)",
     "fields": {"limit_gpus": ["the limit (2) must be at least the deserved quota (4)"]}}

`error` is a stable machine-readable code, `detail` one sentence for a person, `fields`
(for bad input, and for a conflict that names its field, like a name that exists: 409
`conflict`) maps each offending field to its problems. Nested fields are named
the way a client wrote them: `groups[1].pods`, `workloads[3].name`, `node_selector.zone`.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import (
    NON_FIELD_ERRORS,
    ObjectDoesNotExist,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
)
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import set_rollback

from api.outages import outage_response
from scheduler_core.services import errors as service_errors

logger = logging.getLogger(__name__)

NON_FIELD = "non_field_errors"

# DRF's exception codes, renamed where a clearer word exists.
CODES = {
    exceptions.ValidationError: "validation_failed",
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
}


class Conflict(exceptions.APIException):
    """The request clashes with the current state (a reused Idempotency-Key, a race)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "the request conflicts with the current state of the resource"
    default_code = "conflict"


class TooLarge(exceptions.APIException):
    """The body is bigger than the server accepts."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"
    default_code = "too_large"


def error_body(code: str, detail: str, fields: dict[str, list[str]] | None = None, **extra: Any):
    """The JSON body of an error response."""
    body: dict[str, Any] = {"error": code, "detail": detail}
    if fields is not None:
        body["fields"] = fields
    body.update(extra)
    return body


def flatten_errors(detail: Any, path: str = "") -> dict[str, list[str]]:
    """Turn DRF's nested error structure into `{"groups[1].pods": ["..."]}`."""
    out: dict[str, list[str]] = {}

    def walk(value: Any, at: str) -> None:
        if isinstance(value, dict):
            for key, nested in value.items():
                walk(nested, _join(at, key))
        elif isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
            out.setdefault(at or NON_FIELD, []).extend(str(v) for v in value)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if item:
                    walk(item, f"{at}[{i}]")
        else:
            out.setdefault(at or NON_FIELD, []).append(str(value))

    walk(detail, path)
    return out


def _join(path: str, key: Any) -> str:
    if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
        return f"{path}[{key}]"
    if key in (NON_FIELD, api_settings.NON_FIELD_ERRORS_KEY, NON_FIELD_ERRORS):
        return path
    return f"{path}.{key}" if path else str(key)


def summarise(fields: dict[str, list[str]]) -> str:
    """One sentence naming the first problem and how many more there are."""
    if not fields:
        return "the request is invalid"
    field, messages = next(iter(fields.items()))
    first = messages[0] if messages else "is invalid"
    sentence = first if field == NON_FIELD else f"{field}: {first}"
    more = sum(len(m) for m in fields.values()) - 1
    if more > 0:
        sentence += f" (and {more} more problem{'s' if more > 1 else ''})"
    return sentence


def _django_validation_fields(exc: DjangoValidationError) -> dict[str, list[str]]:
    if hasattr(exc, "error_dict"):
        return {
            (NON_FIELD if k == NON_FIELD_ERRORS else k): [str(m) for m in v]
            for k, v in exc.message_dict.items()
        }
    return {NON_FIELD: [str(m) for m in exc.messages]}


def _as_api_exception(exc: Exception) -> exceptions.APIException | None:
    """Map Django's exceptions onto DRF's, so one path renders them all."""
    if isinstance(exc, service_errors.Conflict):  # already cancelled, name taken, in use
        named = hasattr(exc, "error_dict")  # a conflict may name its fields, as bad input does
        return Conflict(exc.message_dict if named else " ".join(str(m) for m in exc.messages))
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(_django_validation_fields(exc))
    if isinstance(exc, PermissionDenied):
        return exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, Http404 | ObjectDoesNotExist):
        return exceptions.NotFound("not found (it does not exist, or you cannot see it)")
    if isinstance(exc, RequestDataTooBig):
        return TooLarge()
    if isinstance(exc, SuspiciousOperation):
        return exceptions.ParseError("the request could not be read")
    if isinstance(exc, IntegrityError):
        logger.info("integrity error turned into 409: %s", exc)
        return Conflict("the change clashed with a concurrent change; re-read and retry")
    if isinstance(exc, exceptions.APIException):
        return exc
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF exception handler producing the one error shape (installed on every API view)."""
    if (unavailable := outage_response(exc)) is not None:
        return unavailable
    api_exc = _as_api_exception(exc)
    if api_exc is None:
        logger.exception("unexpected error in %s", context.get("view"), exc_info=exc)
        set_rollback()
        return Response(
            error_body("server_error", "something went wrong on the server; it has been logged"),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    headers: dict[str, str] = {}
    auth_header = getattr(api_exc, "auth_header", None)  # (NotAuthenticated and alike)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    extra: dict[str, Any] = {}
    if isinstance(api_exc, exceptions.Throttled):
        # Throttled sets `wait` in __init__; the stubs leave it out
        seconds = api_exc.wait  # type: ignore[attr-defined]
        wait = int(seconds or 1) if seconds is not None else 1
        headers["Retry-After"] = str(wait)
        extra["retry_after"] = wait
        if type(api_exc) is exceptions.Throttled:  # DRF's detail: "Request was throttled. ..."
            sentence = f"too many requests: try again in {wait} second{'s' if wait != 1 else ''}"
        else:  # a Fairway subclass says why itself
            sentence = str(api_exc.detail)
        body = error_body(api_exc.default_code, sentence, **extra)
    elif isinstance(api_exc, exceptions.ValidationError):
        fields = flatten_errors(api_exc.detail)
        body = error_body("validation_failed", summarise(fields), fields)
    elif isinstance(api_exc, Conflict) and isinstance(api_exc.detail, dict):
        fields = flatten_errors(api_exc.detail)
        body = error_body("conflict", summarise(fields), fields)
    else:
        code = CODES.get(type(api_exc)) or _code_of(api_exc)
        body = error_body(code, _sentence(api_exc.detail))
    set_rollback()
    return Response(body, status=api_exc.status_code, headers=headers)


def _code_of(exc: exceptions.APIException) -> str:
    for klass, code in CODES.items():
        if isinstance(exc, klass):
            return code
    return getattr(exc, "default_code", "error")


def _sentence(detail: Any) -> str:
    if isinstance(detail, list | dict):
        return summarise(flatten_errors(detail))
    return str(detail)


@csrf_exempt  # nothing to protect, and a 404 must not turn into a CSRF 403
def not_found_view(request, *args, **kwargs) -> JsonResponse:
    """JSON 404 for any path under /api/ that no route matches."""
    return JsonResponse(
        error_body("not_found", f"no API route at {request.path}; see /api/docs/"), status=404
    )
