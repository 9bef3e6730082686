"""ASGI entry point: HTTP (console, API, admin), websockets (live events, node agents) and
the proxy to interactive pods under /proxy/ (HTTP and websockets, console/proxy)."""

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


from console.proxy import proxy_app  # noqa: E402
from scheduler_core.runtime.ports import PROXY_ROOT  # noqa: E402

# A page of another site may not open a pod's websocket with the user's cookie either.
proxy_websockets = AllowedHostsOriginValidator(proxy_app)


async def websockets(scope, receive, send):
    """Agents' websockets to their consumer, pods' to the proxy, every other one through
    the browser stack."""
    if scope["path"] == AGENTS_PATH:
        app = agent_websockets
    elif scope["path"].startswith(PROXY_ROOT):
        app = proxy_websockets
    else:
        app = browser_websockets
    return await app(scope, receive, send)


async def http(scope, receive, send):
    """Pods' pages to the proxy (streamed on the event loop), the rest to Django."""
    app = proxy_app if scope["path"].startswith(PROXY_ROOT) else http_app
    return await app(scope, receive, send)


application = ProtocolTypeRouter({"http": http, "websocket": websockets})
