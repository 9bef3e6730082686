"""The runtime: whatever runs the pods the scheduler places, behind one execution
interface (`interface.ExecutionBackend`), and the bookkeeping around runs.

- `interface`: the protocol the loop and the apply step use, and its value types.
- `simulated`: runs that end after their spec's `duration` (demo, what-if, load tests).
- `reported`: runs that end only when their executor reports it (services.runtime).
- `agent`: node agents run pods as real processes (docs/agent.md): reconcile, reports,
  liveness.
- `routing`: the backend the loop uses: each workload served by its pool's backend.
- `heartbeats`, `usage`, `tick`, `tasks`: node liveness, GPU usage samples for time-based
  fairshare, and the periodic runtime tick that beat runs.

Imports point down: the loop and the adapters use this package; it uses the models, the
services that record what a runtime reports, and the adapters' snapshot types.
"""

from __future__ import annotations

from scheduler_core.runtime.interface import ExecutionBackend
from scheduler_core.runtime.routing import PoolRoutedBackend


def execution_backend() -> ExecutionBackend:
    """The backend that runs this installation's pods, pool by pool (`NodePool.backend`):
    simulated pools by the simulator (reported runs with settings.SIMULATED_RUNTIME off),
    agent pools by node agents. One per cycle."""
    return PoolRoutedBackend()
