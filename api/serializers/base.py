"""Base for request bodies: unknown or read-only keys are an error, not silently dropped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from rest_framework import serializers
from rest_framework.settings import api_settings

from scheduler_core.schemas.errors import SchemaInvalid, validate

NON_FIELD = api_settings.NON_FIELD_ERRORS_KEY


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


class SchemaInputSerializer(StrictInputSerializer):
    """A request body whose shape the schema layer checks (`schema`, a pydantic model).

    The serializer's own fields parse what the transport knows (names of projects and
    pools, looked up in the database); the keys that are the schema's are handed to it as
    the client sent them (their fields only document them). Every problem of the body is
    reported at once. `validated_data["shape"]` is the schema's model.
    """

    schema: type[BaseModel]

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)
        keys = self.schema.model_fields
        errors: dict[str, Any] = {}
        attrs: dict[str, Any] = {}
        try:
            attrs = super().to_internal_value({k: v for k, v in data.items() if k not in keys})
        except serializers.ValidationError as exc:
            errors.update(exc.detail if isinstance(exc.detail, dict) else {NON_FIELD: exc.detail})
        try:
            attrs["shape"] = validate(self.schema, {k: v for k, v in data.items() if k in keys})
        except SchemaInvalid as exc:
            errors.update(exc.by_field())
        if errors:
            raise serializers.ValidationError(errors)
        return attrs
