import signal

import pytest
from fairway_agent.procgroup import signal_group

from tests.agent.helpers import MANAGERS


@pytest.fixture(autouse=True)
def _no_pod_left_behind():
    """Kill the process groups of runs a test left alive (a test failing midway)."""
    yield
    while MANAGERS:
        runs = MANAGERS.pop()
        for pgid in runs.live_groups().values():
            signal_group(pgid, signal.SIGKILL)
        runs.close()
