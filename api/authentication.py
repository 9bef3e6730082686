"""Personal API tokens for scripts: `Authorization: Bearer fw_...` (or `Token fw_...`);
HTTP Basic (username and password) to create the first one, with failed attempts limited."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from scheduler_core.models import ApiToken
from scheduler_core.models.accounts import TOKEN_PREFIX, hash_token
from scheduler_core.sign_in_attempts import SignInLocked, address_of, sign_in_attempt

KEYWORDS = {"bearer", "token"}
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate with a personal token; only its sha256 hash is stored and compared.

    Listed first in the authentication classes so that a request with no credentials gets
    401 with a `WWW-Authenticate: Bearer` challenge rather than 403.
    """

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in KEYWORDS:
            return None  # not ours: let the session try
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "malformed Authorization header: use 'Bearer fw_...'"
            )
        try:
            raw = header[1].decode()
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("the token contains invalid characters") from exc
        if not raw.startswith(TOKEN_PREFIX):
            raise exceptions.AuthenticationFailed(
                f"not a Fairway token (they start with {TOKEN_PREFIX!r})"
            )
        try:  # key_hash is unique: no ordering to compile and sort by, as first() would
            token = ApiToken.objects.select_related("user").get(key_hash=hash_token(raw))
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed("invalid or revoked token") from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("the token's user is deactivated")
        self._touch(token)
        return token.user, token

    @staticmethod
    def _touch(token: ApiToken) -> None:
        """Record use, at most once a minute per token (one UPDATE, no read)."""
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class TooManySignInFailures(exceptions.Throttled):
    """429: this username or address failed to sign in too often (Retry-After says when)."""

    default_code = "too_many_sign_in_failures"

    def __init__(self, locked: SignInLocked) -> None:
        super().__init__(wait=locked.seconds)
        self.detail = exceptions.ErrorDetail(str(locked), self.default_code)


class SignInBasicAuthentication(authentication.BasicAuthentication):
    """HTTP Basic, refused with a 429 while the username or the client address has failed
    too often (scheduler_core.sign_in_attempts)."""

    def authenticate_credentials(self, userid, password, request=None):
        try:
            with sign_in_attempt(
                username=userid,
                address=address_of(request),
                failure=exceptions.AuthenticationFailed,
            ):
                return super().authenticate_credentials(userid, password, request)
        except SignInLocked as exc:
            raise TooManySignInFailures(exc) from None
