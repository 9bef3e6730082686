"""Viewsets: translate HTTP to service and selector calls, and results back to JSON."""
