import signal

import pytest
from fairway_agent.procgroup import signal_group

from tests.agent.helpers import MANAGERS


@pytest.fixture(autouse=True)
def _no_pod_left_behind():
    """Kill the process groups of runs a test left alive (a test failing midway)."""
    yield
    while MANAGERS:
        for pgid in MANAGERS.pop().live_groups().values():
            signal_group(pgid, signal.SIGKILL)
