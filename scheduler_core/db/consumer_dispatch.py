"""What every websocket consumer of Fairway shares.

Channels closes stale database connections before it hands each message to a consumer
(`AsyncConsumer.dispatch`), and it does so on the process's one database thread, the
thread every consumer's database work of the process runs on. So each frame of an agent,
and each live event for a browser, waited until that thread was free: in a burst of runs
an agent's reports reached their consumer one per report stored by any connection of the
process, about a second after they were sent. Fairway's consumers reach the database only
through `database_sync_to_async`, which closes stale connections around every call itself,
so they take each message at once.
"""

from __future__ import annotations

from typing import Any

from channels.consumer import get_handler_name


class DirectDispatch:
    """A consumer mixin (first among the bases): messages are handled as they come, never
    queued behind the database thread."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
