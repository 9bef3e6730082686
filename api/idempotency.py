"""Idempotency-Key on submissions: a retried POST returns the first response again.

Same key and same body: the stored response is replayed (with `Idempotent-Replayed: true`)
and nothing new is created. Same key and a different body: 409. Only successful responses
are stored; a failed request changed nothing, so retrying it simply runs it again. The
stored key is written in the same transaction as the submission, so a crash between the
two cannot leave a workload without its key (or a key without its workload).

Retries sent in parallel all get the first one's response: the key's row is inserted
before the handler runs, in the handler's transaction, so a second request with the same
key waits on it (PostgreSQL holds its insert on the unique index until the first
transaction ends; SQLite lets one writing transaction run at a time) and then, the key
being taken, replays the stored response. Had the first one failed, its row is gone and
the second runs the handler itself.
"""

from __future__ import annotations

import functools
import hashlib
import json

from django.db import IntegrityError, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api.exceptions import Conflict
from scheduler_core.models import IdempotencyKey

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    name=HEADER,
    type=OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "Any unique string (a UUID is best, at most 255 characters). Retrying with the same "
        "key and body replays the first response instead of submitting again; reusing a key "
        "with a different body is a 409."
    ),
)


def _request_hash(request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    text = f"{request.method} {request.path}\n{body}"
    return hashlib.sha256(text.encode()).hexdigest()


def _replay(stored: IdempotencyKey, request_hash: str) -> Response:
    if stored.request_hash != request_hash:
        raise Conflict(f"this {HEADER} was already used for a different request; use a new key")
    return Response(
        stored.response_body, status=stored.response_status, headers={"Idempotent-Replayed": "true"}
    )


def idempotent(handler):
    """Decorate a viewset action so that it honours the Idempotency-Key header."""

    @functools.wraps(handler)
    def wrapper(self, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if key is None:
            return handler(self, request, *args, **kwargs)
        if not key.strip() or len(key) > MAX_KEY_LENGTH or not key.isprintable():
            raise ValidationError(
                {HEADER: [f"must have 1 to {MAX_KEY_LENGTH} printable characters"]}
            )
        request_hash = _request_hash(request)
        stored = IdempotencyKey.objects.filter(user=request.user, key=key).first()
        if stored is not None:
            return _replay(stored, request_hash)
        try:
            with transaction.atomic():
                claim = IdempotencyKey.objects.create(
                    user=request.user,
                    key=key,
                    request_hash=request_hash,
                    response_status=0,  # written below, before anyone can read the row
                    response_body={},
                )
                response = handler(self, request, *args, **kwargs)
                if 200 <= response.status_code < 300:
                    claim.response_status = response.status_code
                    claim.response_body = response.data
                    claim.save(update_fields=["response_status", "response_body"])
                else:
                    claim.delete()
        except IntegrityError:
            # The key is taken: a request with it committed first (we waited for it).
            stored = IdempotencyKey.objects.filter(user=request.user, key=key).first()
            if stored is None:
                raise
            return _replay(stored, request_hash)
        return response

    return wrapper
