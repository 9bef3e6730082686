"""The pool form's fields for each backend's own settings (NodePool.backend_settings), made
from the one declaration of them (scheduler_core.schemas.backends.BACKEND_SETTINGS): a
backend that gains a setting gains its field here without a change.

A field is named `<backend>__<setting>` and shown in a fieldset of its own backend. What
is filled for the pool's backend becomes its `backend_settings` (blank: the default);
a filled field of another backend is an error, never dropped in silence.
"""

from __future__ import annotations

from typing import Any

from django import forms

from scheduler_core.choices import Backend
from scheduler_core.models import NodePool
from scheduler_core.schemas.backends import BACKEND_SETTINGS

SEPARATOR = "__"


def field_name(backend: str, setting: str) -> str:
    return f"{backend}{SEPARATOR}{setting}"


def _label(backend: str) -> str:
    return Backend(backend).label.split(" (")[0]


def _field(backend: str, setting: str, info: Any) -> forms.Field:
    default = info.default if isinstance(info.default, str) else ""
    description = info.description or ""
    return forms.CharField(
        label=setting.replace("_", " ").capitalize(),
        required=False,
        help_text=f"{description} Blank: {default or 'the default'}.",
        widget=forms.TextInput(attrs={"placeholder": default}),
    )


def fields() -> dict[str, forms.Field]:
    """Every backend's settings as form fields."""
    return {
        field_name(backend, setting): _field(backend, setting, info)
        for backend, model in BACKEND_SETTINGS.items()
        for setting, info in model.model_fields.items()
    }


def groups() -> list[tuple[str, tuple[str, ...]]]:
    """(legend, field names) per backend that has settings."""
    return [
        (
            f"{_label(backend)} pools only",
            tuple(field_name(backend, setting) for setting in model.model_fields),
        )
        for backend, model in BACKEND_SETTINGS.items()
    ]


def initial(pool: NodePool) -> dict[str, Any]:
    """The form's values for `pool`'s own backend settings."""
    return {
        field_name(pool.backend, setting): value
        for setting, value in (pool.backend_settings or {}).items()
    }


def take(form: forms.Form, data: dict[str, Any]) -> None:
    """Move the backend fields out of `data`; the chosen backend's filled ones become
    `data["backend_settings"]`, another backend's filled ones errors."""
    chosen = data.get("backend")
    own: dict[str, str] = {}
    for backend, model in BACKEND_SETTINGS.items():
        for setting in model.model_fields:
            name = field_name(backend, setting)
            value = (data.pop(name, "") or "").strip()
            if not value:
                continue
            if backend == chosen:
                own[setting] = value
            else:
                form.add_error(
                    name,
                    f"only {_label(backend)} pools use this: clear it, or choose "
                    f"{_label(backend)} under Runs pods with",
                )
    if chosen is not None:
        data["backend_settings"] = own


def error_aliases(backend: str | None) -> dict[str, str]:
    """The service's error keys (`backend_settings.partition`) -> the form's fields."""
    model = BACKEND_SETTINGS.get(backend or "")
    if model is None:
        return {}
    return {f"backend_settings.{s}": field_name(str(backend), s) for s in model.model_fields}
