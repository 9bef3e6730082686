"""`fairway login`: sign in with your username and password (the CLI creates a token of
its own through the API, as `det` and `runai` do), or paste a token; the token is checked
against the server, then the server and the token are remembered."""

from __future__ import annotations

import argparse
import getpass
import socket
import sys
import time

from fairway_cli import config
from fairway_cli.client import ApiClient
from fairway_cli.errors import OK, UsageError

HELP = "sign in (username and password, or a token) and remember the server"
EPILOG = """\
With a terminal, login asks for your username and password and creates an API token named
after this machine (revoke it in the console, Account > API tokens). The password is sent
once, to create the token; only the token is stored. Or give a token you made yourself.

examples:
  fairway login --url https://fairway.example.org          # asks username and password
  fairway login --url https://fairway.example.org --username alice
  echo "$PASSWORD" | fairway login --url https://fairway.example.org --username alice
  fairway login --url https://fairway.example.org --token fw_...
  echo "$TOKEN" | fairway login --url https://fairway.example.org   # a token from stdin
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
    parser.add_argument(
        "--username",
        help="sign in as this user: the password is asked for (or read from stdin)",
    )
    parser.add_argument(
        "--token",
        help="your API token (fw_...) instead of a password; '-' reads it from stdin",
    )
    parser.add_argument(
        "--token-name",
        help="name of the token login creates (default: 'fairway CLI on HOST, DATE')",
    )
    parser.set_defaults(handler=run, needs_client=False)


def run(args: argparse.Namespace, _client: ApiClient | None = None) -> int:
    url = args.url or config.configured_url()
    if not url:
        raise UsageError("give the server with --url URL (or set FAIRWAY_URL)")
    url = config.normalise_url(url)
    if args.token and args.username:
        raise UsageError("give --username (and a password) or --token, not both")
    if args.token or (not args.username and not sys.stdin.isatty()):
        token = _pasted_token(args.token)
    else:
        token = _created_token(url, args.username, args.token_name)
    settings = config.Settings(url=url, token=token)
    me = ApiClient(settings).get("me/")
    path = config.save(settings)
    print(f"Logged in to {settings.url} as {me['username']} ({me['role']}); saved to {path}")
    return OK


def _pasted_token(given: str | None) -> str:
    """The token given on the command line, or read from stdin ('-', or no terminal)."""
    if given and given != "-":
        token = given
    elif sys.stdin.isatty():
        token = getpass.getpass("API token: ")
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise UsageError("no token given: pass --token or type it when asked")
    return token


def _created_token(url: str, username: str | None, name: str | None) -> str:
    """A new token of the user, created with their username and password (asked for on
    the terminal; the password is read from stdin's first line without one)."""
    if not username:
        username = input("Username: ").strip()
    if not username:
        raise UsageError("no username given")
    if sys.stdin.isatty():
        password = getpass.getpass(f"Password for {username}: ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise UsageError("no password given")
    client = ApiClient(config.Settings(url=url, token=""))
    created = client.request(
        "POST",
        "tokens/",
        json={"name": name or _default_token_name()},
        auth=(username, password),
    )
    return str(created["key"])


def _default_token_name() -> str:
    """'fairway CLI on laptop, 2026-11-28 00:30:12': which machine, and when."""
    return f"fairway CLI on {socket.gethostname()[:40]}, {time.strftime('%Y-%m-%d %H:%M:%S')}"
