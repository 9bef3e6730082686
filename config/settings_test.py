"""Settings for the test suite: the production settings plus knobs only tests use.

pytest runs with this module (pyproject.toml); worker processes that tests start get it
through DJANGO_SETTINGS_MODULE (tests/loop/workers.py).
"""

from config.settings import *  # noqa: F403
from config.settings import env

# Fault injection, e.g. "before_apply=2,before_commit=5": the cycle sleeps at those points
# (before_commit is inside its transaction). Read by scheduler_core.loop.cycle.pause.
SCHEDULER_CYCLE_PAUSES = {
    phase: float(seconds)
    for phase, seconds in env.dict("SCHEDULER_CYCLE_PAUSES", default={}).items()
}
# Real password hashing costs seconds per test on two cores; tests need no strength.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Node agents: short intervals so transport and liveness tests need no long waits.
AGENT_HEARTBEAT_INTERVAL = 0.5
AGENT_USAGE_INTERVAL = 0.5
AGENT_UNREACHABLE_AFTER = 3.0
AGENT_LOST_AFTER = 30.0
# Static files are served from their sources (no manifest): a STATIC_ROOT collected before a
# change to a script would serve the old copy. tests/console/test_static_files.py checks the
# product's storage (config.settings.STORAGES) on a collection of its own.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
