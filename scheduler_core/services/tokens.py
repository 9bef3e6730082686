"""Personal API tokens."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError

from scheduler_core import access
from scheduler_core.models import ApiToken
from scheduler_core.models.accounts import hash_token
from scheduler_core.services.errors import Conflict


def token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """Create a token for `user`; the raw key is returned once and never stored."""
    if not access.is_authenticated(user):
        raise PermissionDenied("sign in to create tokens")
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise ValidationError({"name": "give the token a name (at most 100 characters)"})
    if ApiToken.objects.filter(user=user, name=name).exists():
        raise Conflict({"name": f"you already have a token named {name!r}"})
    raw = ApiToken.generate_raw()
    token = ApiToken.objects.create(user=user, name=name, key_hash=hash_token(raw), prefix=raw[:10])
    return token, raw


def token_revoke(*, user, token: ApiToken) -> None:
    """Delete one of the user's own tokens."""
    if token.user_id != getattr(user, "pk", None):
        raise PermissionDenied("you can only revoke your own tokens")
    token.delete()
