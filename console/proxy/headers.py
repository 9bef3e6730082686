"""Which headers cross the proxy (RFC 9110 section 7.6.1): hop-by-hop headers stay on
their hop, and Fairway's own credentials (its session and CSRF cookies, an Authorization
header) never reach a pod; the pod may not set Fairway's cookies either."""

from __future__ import annotations

from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie

from django.conf import settings

HOP_BY_HOP = frozenset(
    {
        b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
        b"trailer", b"transfer-encoding", b"upgrade", b"proxy-connection",
    }
)  # fmt: skip
# Set by whoever opens the connection to the pod (httpx, the websockets client).
WEBSOCKET_HANDSHAKE = frozenset(
    {
        b"sec-websocket-key", b"sec-websocket-version", b"sec-websocket-extensions",
        b"sec-websocket-protocol", b"sec-websocket-accept",
    }
)  # fmt: skip
# Content-Length stays: the body is streamed at that length (chunked only when the browser's is)
NEVER_FORWARDED = frozenset({b"authorization", b"host"})

Headers = list[tuple[bytes, bytes]]


def fairway_cookies() -> frozenset[str]:
    """The cookies that are Fairway's credentials."""
    return frozenset({settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME})


def _named_by_connection(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    named: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            named |= {part.strip().lower() for part in value.split(b",") if part.strip()}
    return named


def _without_fairway_cookies(value: bytes) -> bytes:
    """A Cookie header's value without Fairway's cookies (the pod's own stay)."""
    ours = fairway_cookies()
    kept = [
        part.strip()
        for part in value.split(b";")
        if part.strip() and part.strip().split(b"=", 1)[0].decode("latin1") not in ours
    ]
    return b"; ".join(kept)


def _hop(headers: Headers, also: frozenset[bytes]) -> Headers:
    drop = HOP_BY_HOP | also | _named_by_connection(headers)
    return [(name.lower(), value) for name, value in headers if name.lower() not in drop]


def request_headers(headers: Headers, *, websocket: bool = False) -> Headers:
    """The request's headers as the pod gets them (Host kept apart: the caller sets it)."""
    also = NEVER_FORWARDED | (WEBSOCKET_HANDSHAKE if websocket else frozenset())
    out: Headers = []
    for name, value in _hop(headers, also):
        if name == b"cookie":
            value = _without_fairway_cookies(value)
            if not value:
                continue
        out.append((name, value))
    return out


def _sets_fairway_cookie(value: bytes) -> bool:
    try:
        cookie = SimpleCookie(value.decode("latin1"))
    except CookieError:
        return True  # what cannot be read is not passed on
    return bool(set(cookie) & fairway_cookies())


def response_headers(headers: Headers) -> Headers:
    """The pod's answer's headers as the browser gets them."""
    return [
        (name, value)
        for name, value in _hop(headers, frozenset())
        if not (name == b"set-cookie" and _sets_fairway_cookie(value))
    ]


def forwarded(scope: dict, prefix: str) -> Headers:
    """X-Forwarded-* for the pod: who asked, over what, at which host and prefix."""
    client = scope.get("client") or ("", 0)
    host = next((v for n, v in scope.get("headers", []) if n.lower() == b"host"), b"")
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", ""), scope.get("scheme"))
    return [
        (b"x-forwarded-for", str(client[0]).encode()),
        (b"x-forwarded-proto", str(scheme or "http").encode()),
        (b"x-forwarded-host", host),
        (b"x-forwarded-prefix", prefix.rstrip("/").encode()),
    ]
