"""Signing in and out."""

from django.contrib.auth import views as auth_views


class LoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    """POST only (Django's default): a link or prefetch never signs anyone out."""
