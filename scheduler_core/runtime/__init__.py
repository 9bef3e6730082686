"""The runtime: whatever runs the pods the scheduler places (docs/executors.md).

Above the seam, the loop and the apply step know only the execution interface
(`interface.ExecutionBackend`, served by `routing.PoolRoutedBackend`). Below it, every
backend is an executor (`executor.Executor`: start, stop, observe, plus declared
capabilities) registered by backend in `registry`, one package each under `executors/`
(`simulated`, `agent`). Between them, generic for every executor:

- `reconcile`: desired (allocations) against actual (runs): records runs, hands starts
  and stops to executors;
- `launch` (and `env`): the launch spec every executor gets, built once;
- `lifecycle`: what executors report of runs, applied to runs and workloads (the
  workload transitions themselves are engine.transitions);
- `tick`, `tasks`: the periodic runtime tick (each executor observes its runs and nodes,
  a reconcile, housekeeping); `usage`: GPU usage samples for time-based fairshare.

Imports point down: the loop and the adapters use this package (the adapters only its
interface); it uses the models, the services that record what a runtime reports, and
the engine's transitions. Nothing here imports an executor but the registry, by name.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler_core.runtime.interface import ExecutionBackend
from scheduler_core.runtime.routing import PoolRoutedBackend


def execution_backend(pool_backends: Mapping[int, str] | None = None) -> ExecutionBackend:
    """The backend that runs this installation's pods, each pool's by the executor of its
    backend (`NodePool.backend`; `pool_backends`: pool id -> backend, as a cycle's
    snapshot has them, else read when needed). One per cycle."""
    return PoolRoutedBackend(pool_backends)
