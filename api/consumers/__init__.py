"""Websocket consumers of the API: the node agents' connection."""
