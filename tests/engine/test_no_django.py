"""The engine (and the scenario package) must never import Django."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import scheduler_core.engine

ROOT = Path(__file__).resolve().parents[2]


def test_engine_modules_import_no_django() -> None:
    modules = ["scheduler_core.engine"] + [
        m.name
        for m in pkgutil.walk_packages(scheduler_core.engine.__path__, "scheduler_core.engine.")
    ]
    modules += ["scheduler_core.whatif.scenarios"]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert len(modules) > 15
