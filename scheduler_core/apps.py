from django.apps import AppConfig


class SchedulerCoreConfig(AppConfig):
    """The scheduling domain: cluster, quotas, workloads, events, and the live scheduler."""

    name = "scheduler_core"
    verbose_name = "Fairway scheduler"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduler_core import simulation_tasks  # noqa: F401  (Celery registers them)
