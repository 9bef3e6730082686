from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API under /api/v1/."""

    name = "api"
