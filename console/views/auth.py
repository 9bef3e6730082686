"""Signing in and out, on the console and the admin: failed passwords are limited per
username and client address (scheduler_core.sign_in_attempts); past the limit the page
says how long to wait and answers 429 with Retry-After."""

from __future__ import annotations

import functools

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.utils.text import capfirst

from scheduler_core.sign_in_attempts import SignInLocked, address_of, sign_in_attempt


class LimitedSignInMixin:
    """An AuthenticationForm whose password check is refused while locked out; then
    `retry_after` holds the seconds to wait."""

    retry_after = 0

    def clean(self):
        try:
            with sign_in_attempt(
                username=self.cleaned_data.get("username") or "",
                address=address_of(self.request),
                failure=ValidationError,
            ):
                return super().clean()
        except SignInLocked as exc:
            self.retry_after = exc.seconds
            raise ValidationError(f"{capfirst(str(exc))}.", code="locked") from None


class SignInForm(LimitedSignInMixin, AuthenticationForm):
    """The console's sign-in form."""


class AdminSignInForm(LimitedSignInMixin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only, as Django's)."""


def answers_429_when_locked(view):
    """Give a sign-in page refused for too many failures the status 429 and Retry-After."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        form = (getattr(response, "context_data", None) or {}).get("form")
        wait = getattr(form, "retry_after", 0)
        if wait:
            response.status_code = 429
            response["Retry-After"] = str(wait)
        return response

    return wrapper


class LoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True
    authentication_form = SignInForm


class LogoutView(auth_views.LogoutView):
    """POST only (Django's default): a link or prefetch never signs anyone out."""


login = answers_429_when_locked(LoginView.as_view())
admin_login = answers_429_when_locked(admin.site.login)
