"""Console pages (placeholder until the console issue lands)."""

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from scheduler_core import selectors


class LoginView(auth_views.LoginView):
    template_name = "console/login.html"


class LogoutView(auth_views.LogoutView):
    pass


@login_required
def overview(request):
    return render(request, "console/overview.html", {"cluster": selectors.cluster_overview()})
