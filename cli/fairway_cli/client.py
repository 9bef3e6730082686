"""The REST client: one session with the bearer token, JSON in and out, and every failure
turned into a CliError carrying the API's own message."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import requests

from fairway_cli import __version__
from fairway_cli.config import API_PREFIX, Settings
from fairway_cli.errors import ApiError, Unreachable

Params = Mapping[str, str | int | float | Sequence[str]]

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 60.0
GATEWAY_DOWN = {502, 503, 504}  # a proxy answering for a server that is not there
PAGE_SIZE = 500


class ApiClient:
    """Talks to one Fairway server's /api/v1/ with a personal token."""

    def __init__(self, settings: Settings) -> None:
        self.url = settings.url
        self.session = requests.Session()
        self.session.headers.update(
            {
                "Authorization": f"Bearer {settings.token}",
                "Accept": "application/json",
                "User-Agent": f"fairway-cli/{__version__}",
            }
        )

    def get(self, path: str, params: Params | None = None) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, json=body if body is not None else {})

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The decoded JSON answer of `method path` (relative to /api/v1/, or a full URL
        such as a page's `next` link)."""
        url = path if path.startswith("http") else f"{self.url}{API_PREFIX}/{path.lstrip('/')}"
        try:
            response = self.session.request(
                method, url, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT), **kwargs
            )
        except requests.exceptions.Timeout:
            raise Unreachable(f"the server at {self.url} did not answer in time") from None
        except requests.exceptions.RequestException as exc:
            raise Unreachable(f"cannot reach the server at {self.url} ({_reason(exc)})") from None
        if response.status_code in GATEWAY_DOWN:
            raise Unreachable(
                f"the server at {self.url} is unavailable (HTTP {response.status_code})"
            )
        body = _json_or_none(response)
        if response.status_code >= 400:
            fallback = f"HTTP {response.status_code} from {url}"
            if body is None:
                fallback += " (not a Fairway API answer: check the server URL)"
            raise ApiError(response.status_code, body if isinstance(body, dict) else None, fallback)
        if response.status_code == 204:
            return None
        if body is None:
            raise ApiError(
                response.status_code,
                None,
                f"the answer from {url} is not JSON: is {self.url} a Fairway server?",
            )
        return body

    def pages(self, path: str, params: Params | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated collection, following `next` links."""
        page = self.get(path, {"limit": PAGE_SIZE, **(params or {})})
        while True:
            yield from page.get("results", [])
            if not page.get("next"):
                return
            page = self.get(_same_server(self.url, page["next"]))


def _same_server(base: str, link: str) -> str:
    """A `next` link's path and query on the server we were given (a proxy in front of the
    server may make it write another scheme or host into its links)."""
    parts = urlsplit(link)
    return f"{base}{parts.path}?{parts.query}"


def _json_or_none(response: requests.Response) -> Any:
    if "json" not in response.headers.get("Content-Type", ""):
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _reason(exc: requests.exceptions.RequestException) -> str:
    """The innermost reason, without urllib3's wrappers: `[Errno 111] Connection refused`."""
    inner = exc.args[0] if exc.args else exc
    inner = getattr(inner, "reason", inner)  # urllib3's MaxRetryError wraps the cause
    text = re.sub(r"^(<[^>]*>|\w+\([^)]*\)): ", "", str(inner))  # the connection object
    return text.removeprefix("Failed to establish a new connection: ") or type(exc).__name__
