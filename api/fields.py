"""Strict serializer fields: JSON types are checked, never coerced.

DRF's stock fields accept "1.5" for a number, 1 for a string and "yes" for a boolean, and a
float field takes 1e400 (infinity). A scheduler API is better served by saying exactly
what is wrong with a value than by guessing what a client meant.
"""

from __future__ import annotations

import math
import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from pydantic import BaseModel
from rest_framework import serializers

# Bounds that keep every value inside what the database and the scheduler handle.
MAX_INT = 2_147_483_647
MAX_FLOAT = 1e12


class StrictFloatField(serializers.FloatField):
    """A finite JSON number (integers accepted), never a string or a boolean."""

    default_error_messages = {
        "invalid": "must be a number, got {value!r}",
        "finite": "must be a finite number",
        "min_value": "must be {min_value} or more",
        "max_value": "must be at most {max_value}",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", MAX_FLOAT)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid", value=_short(data))
        if isinstance(data, float) and not math.isfinite(data):
            self.fail("finite")
        return float(data)


class StrictIntegerField(serializers.IntegerField):
    """A whole JSON number, never a string, a boolean or a fraction."""

    default_error_messages = {
        "invalid": "must be a whole number, got {value!r}",
        "min_value": "must be {min_value} or more",
        "max_value": "must be at most {max_value}",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", MAX_INT)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid", value=data)
        if isinstance(data, float) and math.isfinite(data) and data.is_integer():
            data = int(data)
        if not isinstance(data, int):
            self.fail("invalid", value=_short(data))
        return data


class StrictBooleanField(serializers.BooleanField):
    """true or false, nothing else."""

    default_error_messages = {"invalid": "must be true or false, got {value!r}"}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", value=_short(data))
        return data


class StrictCharField(serializers.CharField):
    """A JSON string, never a number."""

    default_error_messages = {"invalid": "must be a string, got {value!r}"}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=_short(data))
        return super().to_internal_value(data)


NAME_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$"


class StrictSlugField(serializers.RegexField):
    """A name: lowercase letters and digits, words joined by single dashes or underscores."""

    default_error_messages = {
        "invalid": "use lowercase letters, digits and dashes (like 'vision-team'), got {value!r}",
        "type": "must be a string, got {value!r}",
    }

    def __init__(self, **kwargs):
        super().__init__(NAME_PATTERN, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("type", value=_short(data))
        if data and not re.match(NAME_PATTERN, data):
            self.fail("invalid", value=_short(data))
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    """One of a fixed set of strings."""

    default_error_messages = {"invalid_choice": "must be one of {choices}, got {input!r}"}

    def to_internal_value(self, data):
        if not isinstance(data, str) or data not in self.choices:
            self.fail(
                "invalid_choice", input=_short(data), choices=", ".join(map(str, self.choices))
            )
        return data


class LabelMapField(serializers.DictField):
    """A map of label names to label values (strings), like Kubernetes node labels."""

    default_error_messages = {
        "not_a_dict": "must be an object mapping names to string values, got {input_type}",
        "too_many": "at most {max} entries",
    }

    def __init__(self, *, max_entries: int = 64, **kwargs):
        self.max_entries = max_entries
        kwargs.setdefault("child", StrictCharField(max_length=253, allow_blank=True))
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, dict) and len(data) > self.max_entries:
            self.fail("too_many", max=self.max_entries)
        if isinstance(data, dict) and any(not _clean_key(k, 253) for k in data):
            raise serializers.ValidationError(
                "names must have 1 to 253 characters and no control characters"
            )
        return super().to_internal_value(data)


class StringMapField(LabelMapField):
    """A map of names to strings, e.g. environment variables."""

    def __init__(self, **kwargs):
        kwargs.setdefault("child", StrictCharField(max_length=4096, allow_blank=True))
        kwargs.setdefault("max_entries", 256)
        super().__init__(**kwargs)


def _clean_key(key: str, max_length: int) -> bool:
    return 0 < len(key) <= max_length and not any(ord(c) < 32 for c in key)


def _short(value) -> object:
    """A value to quote in an error message, cut down if it is long."""
    text = repr(value)
    return value if len(text) <= 60 else f"{text[:57]}..."


class NameRelatedField(serializers.SlugRelatedField):
    """Refers to a department, project, pool or node by its unique name."""

    default_error_messages = {
        "does_not_exist": "no {noun} named {value!r}",
        "invalid": "must be the name of a {noun} (a string), got {value!r}",
    }

    def __init__(self, *, noun: str, **kwargs):
        self.noun = noun
        kwargs.setdefault("slug_field", "name")
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str) or not _clean_key(data, 100):
            self.fail("invalid", noun=self.noun, value=_short(data))
        try:
            return self.get_queryset().get(**{self.slug_field: data})
        except self.get_queryset().model.DoesNotExist:
            self.fail("does_not_exist", noun=self.noun, value=data)


def schema_field(model: type[BaseModel], name: str, *, choices=None, **kwargs) -> serializers.Field:
    """A field that documents `model.<name>` in the OpenAPI schema with the schema layer's
    type and bounds (`choices`: the labelled choices of a one-of field, named as the rest of
    the API names them). It checks nothing: the value goes on as the client sent it, to the
    schema (through SchemaInputSerializer or the service that validates it)."""
    kwargs.setdefault("required", False)
    if choices is not None:
        return _DocumentedChoice(choices=choices, **kwargs)
    schema = model.model_json_schema()
    documented = _openapi(schema["properties"][name], schema.get("$defs", {}))
    field_class = type(f"{model.__name__}_{name}", (serializers.JSONField,), {})
    return extend_schema_field(documented)(field_class)(**kwargs)


class _DocumentedChoice(serializers.ChoiceField):
    def to_internal_value(self, data):
        return data


def _openapi(schema: Any, defs: dict[str, Any]) -> Any:
    """A pydantic JSON schema as OpenAPI 3.0 writes it: references inlined, null as
    `nullable`, an exclusive bound as a flag."""
    if isinstance(schema, list):
        return [_openapi(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _openapi(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    options = schema.get("anyOf", [])
    if {"type": "null"} in options and len(options) == 2:
        (kept,) = (o for o in options if o != {"type": "null"})
        return {**_openapi(kept, defs), "nullable": True}
    out = {k: _openapi(v, defs) for k, v in schema.items() if k not in ("title", "default")}
    if "exclusiveMinimum" in out:
        out["minimum"], out["exclusiveMinimum"] = out["exclusiveMinimum"], True
    return out
