"""The executors, keyed by backend (`NodePool.backend`, choices.Backend): the one place
that knows which backends exist and what runs each (docs/executors.md).

A new executor adds its backend to choices.Backend and one line to EXECUTORS (the module
and class, imported on first use, so that this registry imports none of them). Code
elsewhere asks for the executor of a pool's backend (`executor_for`), or for the backends
whose executors declare a capability (`backends_with`), never "is this the agent?".
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from scheduler_core.choices import Backend
from scheduler_core.runtime.executor import Capability, Executor, has

# backend -> "module:Class" of its executor
EXECUTORS: dict[str, str] = {
    Backend.SIMULATED: "scheduler_core.runtime.executors.simulated.executor:SimulatedExecutor",
    Backend.AGENT: "scheduler_core.runtime.executors.agent.executor:AgentExecutor",
    Backend.SLURM: "scheduler_core.runtime.executors.slurm.executor:SlurmExecutor",
}


class UnknownBackend(LookupError):
    """A pool names a backend no executor serves."""


@cache
def executor_for(backend: str) -> Executor:
    """The executor of `backend` (one per process)."""
    try:
        path = EXECUTORS[backend]
    except KeyError:
        raise UnknownBackend(f"no executor serves the backend {backend!r}") from None
    module, _, name = path.partition(":")
    executor: Executor = getattr(import_module(module), name)()
    return executor


def executors() -> list[Executor]:
    """Every registered executor, in EXECUTORS' order."""
    return [executor_for(backend) for backend in EXECUTORS]


def backends_with(capability: Capability) -> frozenset[str]:
    """The backends whose executors declare `capability`."""
    return frozenset(backend for backend in EXECUTORS if has(executor_for(backend), capability))


def backends_without(capability: Capability) -> frozenset[str]:
    """The backends whose executors do not declare `capability` (a positive list all
    the same: the registered backends, minus those)."""
    return frozenset(EXECUTORS) - backends_with(capability)
