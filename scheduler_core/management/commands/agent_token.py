"""`manage.py agent_token POOL`: a join token for node agents, and the command to run on a
node to register it in the pool."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from scheduler_core.models import NodePool
from scheduler_core.services.agents import agent_command_line, join_token_create


class Command(BaseCommand):
    help = (
        "Create a join token for POOL and print it with the fairway-agent command line that "
        "registers a node in that pool. The token is shown only now."
    )

    def add_arguments(self, parser):
        parser.add_argument("pool", help="Name of the node pool.")
        parser.add_argument("--description", default="", help="What the token is for.")
        parser.add_argument(
            "--expires-in", type=int, default=None, metavar="SECONDS",
            help="Seconds until the token stops working (default: JOIN_TOKEN_TTL, a day).",
        )  # fmt: skip
        parser.add_argument(
            "--single-use", action="store_true",
            help="The token is used up by the first node it registers.",
        )  # fmt: skip
        parser.add_argument(
            "--server", default="http://localhost:8000",
            help="The server's URL as nodes reach it (default: http://localhost:8000).",
        )  # fmt: skip

    def handle(
        self, *args, pool: str, description: str, expires_in, server: str, single_use: bool,
        **options,
    ):  # fmt: skip
        found = NodePool.objects.filter(name=pool).first()
        if found is None:
            names = ", ".join(NodePool.objects.values_list("name", flat=True)) or "none yet"
            raise CommandError(f"no pool named {pool!r} (pools: {names})")
        if expires_in is not None and expires_in < 1:
            raise CommandError("--expires-in must be 1 second or more")
        expires_at = timezone.now() + timedelta(seconds=expires_in) if expires_in else None
        token, raw = join_token_create(
            pool=found, by=None, description=description, expires_at=expires_at,
            single_use=single_use,
        )  # fmt: skip
        self.stdout.write(f"Join token for pool {found.name} (shown only now): {raw}")
        assert token.expires_at is not None
        once = " It registers one node only." if single_use else ""
        self.stdout.write(f"It expires at {token.expires_at.isoformat(timespec='seconds')}.{once}")
        self.stdout.write("On the node, run:")
        self.stdout.write(f"  {agent_command_line(server=server, join_token=raw)}")
