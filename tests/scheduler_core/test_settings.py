"""Settings come from the environment, with secure defaults when DEBUG is off."""

import os
import subprocess
import sys

from django.conf import settings


def settings_in_subprocess(env: dict[str, str], expr: str) -> str:
    code = (
        "import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE','config.settings');"
        f"django.setup(); from django.conf import settings as s; print({expr})"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"}
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        check=True,
    )
    return result.stdout.strip()


def test_embedded_defaults(tmp_path):
    env = {"FAIRWAY_VAR_DIR": str(tmp_path)}
    assert settings_in_subprocess(env, "s.DATABASES['default']['ENGINE']").endswith("sqlite3")
    assert settings_in_subprocess(env, "s.DEBUG") == "False"
    assert settings_in_subprocess(env, "s.CHANNEL_LAYERS['default']['BACKEND']").endswith(
        "InMemoryChannelLayer"
    )
    # without SECRET_KEY a random key is generated once and kept
    key = settings_in_subprocess(env, "s.SECRET_KEY")
    assert len(key) >= 40 and "insecure" not in key
    assert settings_in_subprocess(env, "s.SECRET_KEY") == key


def test_environment_overrides(tmp_path):
    env = {
        "FAIRWAY_VAR_DIR": str(tmp_path),
        "DATABASE_URL": "postgres://u:p@db:5432/fw",
        "REDIS_URL": "redis://cache:6379/0",
        "SECRET_KEY": "s3cret",
        "ALLOWED_HOSTS": "fairway.example.org",
    }
    assert settings_in_subprocess(env, "s.DATABASES['default']['HOST']") == "db"
    assert settings_in_subprocess(env, "s.CELERY_BROKER_URL") == "redis://cache:6379/0"
    assert settings_in_subprocess(env, "s.CELERY_TASK_ALWAYS_EAGER") == "False"
    assert settings_in_subprocess(env, "s.CHANNEL_LAYERS['default']['BACKEND']").endswith(
        "RedisChannelLayer"
    )
    assert settings_in_subprocess(env, "s.ALLOWED_HOSTS") == "['fairway.example.org']"
    assert settings_in_subprocess(env, "s.SECRET_KEY") == "s3cret"
