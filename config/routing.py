"""Websocket routes: one consumer for the console's live events."""

from django.urls import path

from console.consumers import EventsConsumer

websocket_urlpatterns = [
    path("ws/events/", EventsConsumer.as_asgi()),
]
