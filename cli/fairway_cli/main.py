"""The `fairway` command line: parse, call the command, turn failures into one line on
stderr and an exit code (0 ok, 1 the API said no, 2 usage, 3 no server or no login)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from fairway_cli import __version__, config
from fairway_cli.client import ApiClient
from fairway_cli.commands import cancel, describe, listing, login, logs, submit, top, whatif
from fairway_cli.errors import USAGE, ApiError, CliError

COMMANDS = (login, submit, listing, describe, logs, cancel, top, whatif)
DESCRIPTION = "Fairway researcher CLI: submit and follow workloads on a Fairway GPU cluster."
EPILOG = """\
examples:
  fairway login --url https://fairway.example.org
  fairway submit bert --project nlp --gpus 2 --image pytorch:2.3 -- python train.py
  fairway list
  fairway describe nlp/bert
  fairway logs bert -f
  fairway cancel bert
  fairway top
  fairway whatif trace philly.csv --start 2017-10-25T19:00 --hours 24 --nodes 48   (admins)

Every read command takes --json. FAIRWAY_URL and FAIRWAY_TOKEN override the config file
(~/.config/fairway/config.json, or $FAIRWAY_CONFIG).
exit codes: 0 ok, 1 the API refused (its message is shown), 2 usage error,
            3 cannot reach the server or not logged in
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairway",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fairway {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """The options before the first `--`, and the workload's command after it."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    options, command = split_command(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(options)
    if not hasattr(args, "handler"):
        parser.print_help(sys.stderr)
        return USAGE
    if command and not getattr(args, "takes_command", False):
        parser.error("only `fairway submit` takes a command after --")
    args.command = command
    try:
        client = ApiClient(config.load()) if args.needs_client else None
        return int(args.handler(args, client))
    except CliError as exc:
        hint = args.handler is not login.run
        print(f"fairway: error: {_message(exc, login_hint=hint)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _message(exc: CliError, *, login_hint: bool) -> str:
    if login_hint and isinstance(exc, ApiError) and exc.status == 401:
        return f"{exc} (run `fairway login` with a valid token)"
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
