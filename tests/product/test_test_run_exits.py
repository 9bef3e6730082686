"""The test run itself: once its tests are done it exits, even when a test left a thread
blocked (tests/exit_watchdog.py); CI then reports a failure that says why, not a timeout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LEAVES_A_THREAD_BLOCKED = """
import threading

def test_leaves_a_thread_blocked():
    threading.Thread(target=threading.Event().wait, name="blocked-forever").start()
"""


def test_a_run_that_left_a_thread_blocked_exits_and_says_which(tmp_path: Path) -> None:
    (tmp_path / "test_blocked.py").write_text(LEAVES_A_THREAD_BLOCKED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    plugins = ["-p", "tests.exit_watchdog", "-p", "no:django", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *plugins,
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path),
        ],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "FAIRWAY_TEST_EXIT_GRACE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 passed" in done.stdout
    assert done.returncode == 1, "the test passed, but leaving a thread blocked is a failure"
    assert "threads still running: blocked-forever" in done.stderr
