"""Rate limits on submissions, per token (or per user for the browser session)."""

from __future__ import annotations

import logging

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from scheduler_core.models import ApiToken
from scheduler_core.outages import REDIS_OUTAGES

logger = logging.getLogger(__name__)


class SubmissionThrottle(SimpleRateThrottle):
    """`REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["submissions"]` per token or session user.

    A script's token has its own budget, so one runaway script does not lock its owner
    out of the console. The counts live in the cache (Redis): while it is unreachable the
    limit is not applied (a warning says so), rather than refusing every submission.
    """

    scope = "submissions"

    def get_rate(self) -> str | None:
        # Read the settings each time (not at import) so a change applies at once.
        # (the stubs type the rates as numbers; they are strings such as "600/min")
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # type: ignore[return-value]

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except REDIS_OUTAGES as exc:
            logger.warning("submission rate limit not applied: the cache is unreachable (%s)", exc)
            return True

    def get_cache_key(self, request, view) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class AgentRegistrationThrottle(SubmissionThrottle):
    """`DEFAULT_THROTTLE_RATES["agent_registrations"]` per client address: the join token is
    a secret worth guessing, so attempts are limited whoever sends them."""

    scope = "agent_registrations"

    def get_cache_key(self, request, view) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
