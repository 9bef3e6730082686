"""The runtime: whatever runs the pods the scheduler places, behind one execution
interface (`interface.ExecutionBackend`), and the bookkeeping around runs.

- `interface`: the protocol the loop and the apply step use, and its value types.
- `simulated`: runs that end after their spec's `duration` (demo, what-if, load tests).
- `reported`: runs that end only when their executor reports it (services.runtime).
- `heartbeats`, `usage`, `tick`, `tasks`: node liveness, GPU usage samples for time-based
  fairshare, and the periodic runtime tick that beat runs.

Imports point down: the loop and the adapters use this package; it uses the models, the
services that record what a runtime reports, and the adapters' snapshot types.
"""

from __future__ import annotations

from django.conf import settings

from scheduler_core.runtime.interface import ExecutionBackend
from scheduler_core.runtime.reported import ReportedBackend
from scheduler_core.runtime.simulated import SimulatedBackend


def execution_backend() -> ExecutionBackend:
    """The backend that runs this installation's pods (settings.SIMULATED_RUNTIME)."""
    return SimulatedBackend() if settings.SIMULATED_RUNTIME else ReportedBackend()
