"""Importing a benchmark's modules leaves the importing process as it was.

The test process's environment is what its real Celery workers inherit (tests/loop): a
module that rewrote DATABASE_URL or dropped REDIS_URL at import once left every later
worker without a broker.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import benchmarks

ROOT = Path(benchmarks.__file__).resolve().parents[1]  # the repository

_ENTRY_POINTS = {"__main__"}  # `python -m` runs these: they may set the process up


def _modules() -> list[str]:
    found = pkgutil.walk_packages(benchmarks.__path__, prefix="benchmarks.")
    return sorted(m.name for m in found if m.name.rsplit(".", 1)[-1] not in _ENTRY_POINTS)


def test_importing_the_benchmarks_changes_no_environment_variable():
    modules = _modules()
    assert "benchmarks.slurm_vs_fairway.latency" in modules
    script = (
        "import importlib, json, os, sys, django\n"
        "django.setup()\n"
        "before = dict(os.environ)\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "keys = set(before) | set(os.environ)\n"
        "print(json.dumps(sorted(k for k in keys if before.get(k) != os.environ.get(k))))\n"
    )
    env = {"DJANGO_SETTINGS_MODULE": "config.settings_test", "PATH": "/usr/bin:/bin",
           "REDIS_URL": "redis://127.0.0.1:1/0", "DATABASE_URL": "sqlite:///:memory:"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", script, *modules], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
