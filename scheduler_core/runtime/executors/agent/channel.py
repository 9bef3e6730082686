"""How the server side reaches a node's agent: the consumer serving that node's websocket
joins `node_group(node_id)`; `send_many` hands it messages (the reconcile calls the
executor after commit), which the consumer numbers and sends."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from scheduler_core.services.agents import node_group

logger = logging.getLogger(__name__)

# The channel layer message type the consumer handles (AgentConsumer.agent_send).
SEND_TYPE = "agent.send"


def send_many(messages: Sequence[tuple[int, str, dict[str, Any]]]) -> None:
    """Hand each (node, protocol message type, its fields) to the node's agent
    connection, if one is open (a node with none gets it again from the reconcile on its
    next hello), each node's in order, in one call into the channel layer: outside an
    event loop (the worker) each call starts a loop of its own and connects to Redis, so a
    reconcile's starts go together."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    by_node: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for node_id, type, body in messages:
        by_node[node_id].append({"type": SEND_TYPE, "frame_type": type, "body": body})

    async def send_node(node_id: int, items: list[dict[str, Any]]) -> None:
        try:
            for item in items:
                await layer.group_send(node_group(node_id), item)
        except Exception:  # Redis down: the write stands; the agent's next hello catches up
            logger.warning(
                "could not send %d messages to node %s now", len(items), node_id, exc_info=True
            )

    async def send_all() -> None:
        await asyncio.gather(*(send_node(n, items) for n, items in by_node.items()))

    async_to_sync(send_all)()
