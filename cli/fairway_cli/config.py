"""Where the CLI finds its server and token.

The file `~/.config/fairway/config.json` (or `$FAIRWAY_CONFIG`) holds `{"url", "token"}`,
written by `fairway login` readable by its owner only; `FAIRWAY_URL` and `FAIRWAY_TOKEN`
override what it says.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from fairway_cli.errors import Unreachable, UsageError

API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class Settings:
    """The server's base URL (no trailing slash, no /api/v1) and the bearer token."""

    url: str
    token: str


def config_path() -> Path:
    """The config file: $FAIRWAY_CONFIG, else ~/.config/fairway/config.json."""
    explicit = os.environ.get("FAIRWAY_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "fairway" / "config.json"


def normalise_url(url: str) -> str:
    """`https://host/` or `https://host/api/v1/` -> `https://host`; anything that is not
    an http(s) URL is a usage error."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) == 0:
        raise UsageError(f"the server URL must start with http:// or https://, got {url!r}")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    return url


def read_file() -> dict[str, str]:
    """What the config file says (empty when there is none)."""
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise Unreachable(f"cannot read the config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise Unreachable(f"the config file {path} is not a JSON object")
    return {k: v for k, v in data.items() if isinstance(v, str)}


def configured_url() -> str | None:
    """The server URL from the environment or the file, if any."""
    return os.environ.get("FAIRWAY_URL") or read_file().get("url") or None


def load() -> Settings:
    """The settings to talk to the server with; exit 3 when the URL or token is missing."""
    stored = read_file()
    url = os.environ.get("FAIRWAY_URL") or stored.get("url")
    token = os.environ.get("FAIRWAY_TOKEN") or stored.get("token")
    if not url:
        raise Unreachable("no server configured: run `fairway login --url URL` or set FAIRWAY_URL")
    if not token:
        raise Unreachable("not logged in: run `fairway login` or set FAIRWAY_TOKEN")
    return Settings(url=normalise_url(url), token=token.strip())


def save(settings: Settings) -> Path:
    """Write the config file readable and writable by its owner only (0600)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = json.dumps({"url": settings.url, "token": settings.token}, indent=2) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an existing file keeps its mode otherwise
        handle.write(body)
    return path
