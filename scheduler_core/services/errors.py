"""Collecting field errors so that one request reports every problem at once."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.text import slugify


class FieldErrors:
    """Accumulates `field -> messages` and raises one ValidationError at the end."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        self.errors.setdefault(field, []).append(message)

    def extend(self, fields: dict[str, list[str]]) -> None:
        """Add `field -> messages`, e.g. a schema's (SchemaInvalid.by_field())."""
        for field, messages in fields.items():
            self.errors.setdefault(field, []).extend(messages)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationError(self.errors)


def check_slug_name(errors: FieldErrors, name: str) -> None:
    """Names are slugs: they appear in URLs and scenario files."""
    if not name or slugify(name) != name:
        errors.add(
            "name",
            f"use lowercase letters, digits and dashes (like 'vision-team'), got {name!r}",
        )


def require_non_negative(errors: FieldErrors, field: str, value: float | None) -> None:
    if value is None:
        return
    if not isinstance(value, int | float) or isinstance(value, bool):
        errors.add(field, f"must be a number, got {value!r}")
    elif value < 0:
        errors.add(field, f"must be 0 or more, got {value:g}")
