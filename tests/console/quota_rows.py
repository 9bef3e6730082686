"""The quotas page's inline rows, as the tests post them."""

from __future__ import annotations

from django.urls import reverse

HTMX = {"HTTP_HX_REQUEST": "true"}


def row_url(name, kind, owner, pool):
    return reverse(f"console:{name}", args=[kind, owner.pk, pool.pk])


def row_data(kind, owner, pool, **values):
    prefix = f"{kind}-{owner.pk}-{pool.pk}"
    base = {"gpus": 8, "limit_gpus": ""}
    base.update(values)
    return {f"{prefix}-{k}": v for k, v in base.items()}
