"""How the server side reaches a node's agent: the consumer serving that node's websocket
joins `node_group(node_id)`; `send_now` hands it a message (the reconcile calls the
executor after commit), which the consumer numbers and sends."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from scheduler_core.services.agents import node_group

logger = logging.getLogger(__name__)

# The channel layer message type the consumer handles (AgentConsumer.agent_send).
SEND_TYPE = "agent.send"


def send_now(node_id: int, type: str, body: dict[str, Any]) -> None:
    """Hand a protocol message (`type` and its fields) to the node's agent connection, if
    one is open (a node with none gets it again from the reconcile on its next hello)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            node_group(node_id), {"type": SEND_TYPE, "frame_type": type, "body": body}
        )
    except Exception:  # Redis down: the write stands; the agent's next hello catches up
        logger.warning("could not send %s to node %s now", type, node_id, exc_info=True)
