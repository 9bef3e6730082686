"""Files a user uploaded with a form that came back with errors, kept for an hour so that
the form's next try need not upload them again (a browser empties file fields whenever a
page is drawn). Each is kept in the cache under an unguessable token that the form sends
back in a hidden field; the token is bound to the user who uploaded it."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.core.cache import cache

KEEP_SECONDS = 3600
TOKEN_BYTES = 16


@dataclass(frozen=True)
class KeptUpload:
    """A kept file: its token, its name as uploaded, and its text."""

    token: str
    name: str
    text: str


def _key(owner: int | None, token: str) -> str:
    return f"fairway:kept-upload:{owner or 0}:{token}"


def upload_keep(*, owner: int | None, name: str, text: str) -> KeptUpload:
    """Keep `text` (the file `name`) for `owner`; its token comes back with the form."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    cache.set(_key(owner, token), {"name": name, "text": text}, KEEP_SECONDS)
    return KeptUpload(token=token, name=name, text=text)


def upload_kept(*, owner: int | None, token: str | None) -> KeptUpload | None:
    """The file kept for `owner` under `token`, or None (none, expired, or another's)."""
    if not token or len(token) > 64:
        return None
    found = cache.get(_key(owner, token))
    if not isinstance(found, dict):
        return None
    return KeptUpload(token=token, name=str(found["name"]), text=str(found["text"]))
