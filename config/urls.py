"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path

from api.metrics import metrics_view
from console.views.auth import AdminSignInForm, admin_login

# The admin's sign-in limits failed passwords like the console's (console.views.auth).
admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("metrics", metrics_view, name="metrics"),
    path("", include("console.urls")),
]
