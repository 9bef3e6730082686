"""What can go wrong, and the exit code each failure gives (the README lists them)."""

from __future__ import annotations

from typing import Any

OK = 0
API_REFUSED = 1
USAGE = 2
UNREACHABLE = 3


class CliError(Exception):
    """A failure shown to the user as one line on stderr; `exit_code` says which kind."""

    exit_code = API_REFUSED


class UsageError(CliError):
    """The command line is wrong (argparse's own errors exit 2 as well)."""

    exit_code = USAGE


class Unreachable(CliError):
    """No answer from the server, or no server/token configured to ask."""

    exit_code = UNREACHABLE


class NotFound(CliError):
    """A workload reference that matches nothing the user can see."""


class ApiError(CliError):
    """The API answered with an error: its one-sentence `detail` is the message."""

    def __init__(self, status: int, body: dict[str, Any] | None, fallback: str) -> None:
        self.status = status
        self.body = body or {}
        self.code = str(self.body.get("error") or "")
        self.detail = str(self.body.get("detail") or fallback)
        self.fields: dict[str, list[str]] = self.body.get("fields") or {}
        super().__init__(self.detail)
