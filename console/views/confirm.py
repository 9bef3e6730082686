"""Deleting from the console: a page that says what deleting does, then the delete itself.

The services refuse to delete what is still in use (`ResourceInUse`, saying what to do
first); the page shows their words instead of deleting.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect

from console.views.common import page


def confirm_delete(
    request,
    *,
    what: str,
    effects: list[str],
    delete: Callable[[], None],
    done_url: str,
    cancel_url: str,
    page_key: str,
):
    """GET: what deleting `what` does (`effects`) and a button; POST: `delete()`, then
    back to `done_url`, or the page again with the reason it was refused."""
    error = None
    if request.method == "POST":
        try:
            delete()
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            messages.success(request, f"Deleted {what}.")
            return redirect(done_url)
    return page(
        request,
        "console/confirm_delete.html",
        page_key,
        {"what": what, "effects": effects, "error": error, "cancel_url": cancel_url},
    )


def plural(count: int, noun: str) -> str:
    """A count and its noun: 1 node, 3 nodes."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
