"""Who may open which console page. The services check again on every write; these guards
make sure a page never even renders controls a user may not use (403 otherwise)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from scheduler_core import access


def role_required(check: Callable[[access.AnyUser | None], bool], message: str):
    """A view decorator: sign-in required, then `check(user)` or 403 with `message`."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not check(request.user):
                raise PermissionDenied(message)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


admin_required = role_required(access.is_any_admin, "this page is for department and system admins")
system_admin_required = role_required(access.is_system_admin, "this action is for system admins")
