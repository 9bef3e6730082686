"""Websocket routes: the console's live events (browsers) and the node agents' connection.

The two are served by different stacks (config/asgi.py): browsers authenticate with their
session cookie, so their websockets check the Origin header (no other site may open one with
the user's cookie) and go through the session middleware; agents send no Origin and no
cookie, they authenticate with their node credential in the Authorization header, which a
browser cannot set on a websocket, so a page of another site cannot borrow anything.
"""

from django.urls import path

from api.consumers.agents import AgentConsumer
from console.consumers import EventsConsumer

AGENTS_PATH = "/ws/agents/"

websocket_urlpatterns = [
    path("ws/events/", EventsConsumer.as_asgi()),
]
agent_websocket_urlpatterns = [
    path(AGENTS_PATH.lstrip("/"), AgentConsumer.as_asgi()),
]
