"""Base for request bodies: unknown or read-only keys are an error, not silently dropped."""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers


class StrictInputSerializer(serializers.Serializer):
    """A request body whose keys must all be writable fields of the serializer.

    Unknown keys are reported together with every other problem of the body.
    """

    def to_internal_value(self, data):
        unknown: dict[str, list[str]] = {}
        if isinstance(data, Mapping):
            writable = {name for name, f in self.fields.items() if not f.read_only}
            known = ", ".join(sorted(writable)) or "none"
            unknown = {
                str(k)[:60]: [f"unknown field (known fields: {known})"]
                for k in data
                if k not in writable
            }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from exc
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value
