"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path

from api.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("metrics", metrics_view, name="metrics"),
    path("", include("console.urls")),
]
