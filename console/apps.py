from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The browser console: pages, forms and the live-events websocket."""

    name = "console"
