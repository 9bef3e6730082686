"""How the server side reaches a node's agent: the consumer serving that node's websocket
joins `node_group(node_id)`; `send_now` hands it a message (the reconcile calls the
executor after commit), which the consumer numbers and sends."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

# The channel layer message type the consumer handles (AgentConsumer.agent_send).
SEND_TYPE = "agent.send"


def node_group(node_id: int) -> str:
    """The channel layer group of the agent connection of node `node_id`."""
    return f"agents.node.{node_id}"


def send_now(node_id: int, type: str, body: dict[str, Any]) -> None:
    """Hand a protocol message (`type` and its fields) to the node's agent connection, if
    one is open (a node with none gets it again from the reconcile on its next hello)."""
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(
        node_group(node_id), {"type": SEND_TYPE, "frame_type": type, "body": body}
    )
