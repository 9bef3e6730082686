"""The benchmark's own process: a database of its own and no broker, then Django.

Only the entry point (`python -m benchmarks.slurm_vs_fairway`) calls `configure()`: it
rewrites this process's environment, which a test process importing the benchmark's
modules must keep (its Celery workers inherit it).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import django

BENCH_DIR = Path(__file__).resolve().parents[2] / "var" / "slurm-bench"


def _own_database() -> str:
    """A database of the benchmark's own, fresh each run (never the one DATABASE_URL
    names): SQLite under BENCH_DIR, or FAIRWAY_BENCH_DATABASE_URL."""
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = BENCH_DIR / "fairway.sqlite3"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return os.environ.get("FAIRWAY_BENCH_DATABASE_URL", f"sqlite:///{path}")


def configure() -> None:
    """Set up Django for a benchmark run; call before importing anything that needs models
    (the Slurm executor lives in scheduler_core.runtime, which imports them)."""
    os.environ["DATABASE_URL"] = _own_database()
    os.environ.pop("REDIS_URL", None)  # no broker: cycles run in this process (eager Celery)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    logging.getLogger("celery").setLevel(logging.WARNING)  # a line per eager cycle otherwise
