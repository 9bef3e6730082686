from django.apps import AppConfig


class SchedulerCoreConfig(AppConfig):
    """The scheduling domain: cluster, quotas, workloads, events, and the live scheduler."""

    name = "scheduler_core"
    verbose_name = "Fairway scheduler"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduler_core.db import lookups  # noqa: F401  (registers `__any_of`)

        # Celery registers the tasks of every layer in every process (eager runs in tests
        # and the one-command run need them registered where they are sent by name).
        from scheduler_core.loop import tasks as loop_tasks  # noqa: F401
        from scheduler_core.runtime import tasks as runtime_tasks  # noqa: F401
        from scheduler_core.whatif import tasks as whatif_tasks  # noqa: F401
