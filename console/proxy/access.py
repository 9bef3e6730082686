"""Who asks and where to: the user of a proxy request's session cookie (the console's
sign-in; the proxy serves browsers), and the pod port it names, for a user who may see the
workload (selectors.ports.proxy_target: `visible_to`, as the workload's page)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.http import parse_cookie

from scheduler_core.runtime.ports import PROXY_ROOT
from scheduler_core.selectors.ports import ProxyTarget, proxy_target

# /proxy/<workload id>/<pod>/<port name>/<the rest>
PATH = re.compile(
    "^" + re.escape(PROXY_ROOT) + r"(?P<workload>[0-9]{1,18})/(?P<pod>[a-z0-9_-]{1,80})/"
    r"(?P<port>[a-z0-9-]{1,15})(?P<rest>/.*)?$"
)


@dataclass(frozen=True)
class Asked:
    """What a proxy request names: the workload, pod and port, and its proxy prefix."""

    workload_id: int
    pod: str
    port: str
    rest: str | None  # None: the prefix without its final slash

    @property
    def prefix(self) -> str:
        return f"{PROXY_ROOT}{self.workload_id}/{self.pod}/{self.port}/"


def asked(path: str) -> Asked | None:
    """The workload, pod and port a proxy path names (None: not a proxy path)."""
    match = PATH.match(path)
    if match is None:
        return None
    return Asked(int(match["workload"]), match["pod"], match["port"], match["rest"])


def _user(scope: dict[str, Any]):
    cookies: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        if name.lower() == b"cookie":
            cookies |= parse_cookie(value.decode("latin1"))
    store = import_module(settings.SESSION_ENGINE).SessionStore
    session = store(cookies.get(settings.SESSION_COOKIE_NAME))
    return get_user(SimpleNamespace(session=session))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Decision:
    """Signed in or not, and where the request goes (None: a 404)."""

    signed_in: bool
    target: ProxyTarget | None


def _decide(scope: dict[str, Any], where: Asked) -> Decision:
    user = _user(scope)
    if not user.is_authenticated:
        return Decision(False, None)
    target = proxy_target(user=user, workload_id=where.workload_id, pod=where.pod, port=where.port)
    return Decision(True, target)


decide = database_sync_to_async(_decide)
"""Whether the request's user is signed in, and its target (run off the event loop)."""
