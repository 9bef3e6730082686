"""`fairway login`: check a token against the server and remember both."""

from __future__ import annotations

import argparse
import getpass
import sys

from fairway_cli import config
from fairway_cli.client import ApiClient
from fairway_cli.errors import OK, UsageError

HELP = "store the server URL and your API token (checked against the server first)"
EPILOG = """\
Create a token in the console (Account > API tokens) or with your password:
  curl -u alice -X POST https://fairway.example.org/api/v1/tokens/ \\
       -H 'Content-Type: application/json' -d '{"name": "laptop"}'

examples:
  fairway login --url https://fairway.example.org       # asks for the token
  echo "$TOKEN" | fairway login --url https://fairway.example.org
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "login",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", help="the server, e.g. https://fairway.example.org")
    parser.add_argument("--token", help="your API token (fw_...); read from stdin when omitted")
    parser.set_defaults(handler=run, needs_client=False)


def run(args: argparse.Namespace, _client: ApiClient | None = None) -> int:
    url = args.url or config.configured_url()
    if not url:
        raise UsageError("give the server with --url URL (or set FAIRWAY_URL)")
    settings = config.Settings(url=config.normalise_url(url), token=_token(args.token))
    me = ApiClient(settings).get("me/")
    path = config.save(settings)
    print(f"Logged in to {settings.url} as {me['username']} ({me['role']}); saved to {path}")
    return OK


def _token(given: str | None) -> str:
    if given:
        token = given
    elif sys.stdin.isatty():
        token = getpass.getpass("API token: ")
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise UsageError("no token given: pass --token or type it when asked")
    return token
