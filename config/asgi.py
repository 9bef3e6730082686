"""ASGI entry point: HTTP (console, API, admin) and websockets (live events, node agents)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)

from config.http_handler import ThreadPoolHTTPHandler  # noqa: E402

# HTTP: Django's synchronous request handling, one thread call per request
# (config/http_handler.py says why).
http_app = ThreadPoolHTTPHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from config.routing import (  # noqa: E402
    AGENTS_PATH,
    agent_websocket_urlpatterns,
    websocket_urlpatterns,
)

browser_websockets = AllowedHostsOriginValidator(
    AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
)
# Agents send no Origin header (the validator would refuse them) and no cookie: they present
# their node credential, checked by the consumer (config/routing.py says why this is safe).
agent_websockets = URLRouter(agent_websocket_urlpatterns)


async def websockets(scope, receive, send):
    """Agents' websockets to their consumer, every other one through the browser stack."""
    app = agent_websockets if scope["path"] == AGENTS_PATH else browser_websockets
    return await app(scope, receive, send)


application = ProtocolTypeRouter({"http": http_app, "websocket": websockets})
