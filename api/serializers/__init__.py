"""Serializers: translate JSON to service arguments and models to JSON (no queries here)."""
