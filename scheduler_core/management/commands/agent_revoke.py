"""`manage.py agent_revoke NODE`: revoke a node's agent credential."""

from django.core.management.base import BaseCommand, CommandError

from scheduler_core.models import Node
from scheduler_core.services.agents import node_credential_revoke


class Command(BaseCommand):
    help = (
        "Revoke the agent credential of NODE: its agent is refused and its open connections "
        "are closed at once. It may register again with a join token."
    )

    def add_arguments(self, parser):
        parser.add_argument("node", help="Name of the node.")

    def handle(self, *args, node: str, **options):
        found = Node.objects.filter(name=node).first()
        if found is None:
            raise CommandError(f"no node named {node!r}")
        if node_credential_revoke(node=found):
            self.stdout.write(f"Revoked the credential of node {found.name}.")
        else:
            self.stdout.write(f"Node {found.name} had no valid credential: nothing to revoke.")
