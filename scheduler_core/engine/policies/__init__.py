"""The actions of a cycle by name, and each scheduling policy as a plain list of them.

A pool runs one policy (PoolConfig.policy):
- quota: KAI-Scheduler / Run:ai's default actions, least disruptive first (QUOTA_POLICY);
  each acts on every quota pool at once;
- fairshare and priority: Determined's native policies (determined_fairshare.py,
  determined_priority.py), each one pool-level action run pool by pool.

A cycle (DEFAULT_ACTIONS) handles faults first (facts, not choices), then the quota
policy's actions with the Determined pools scheduled right after allocation.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.engine.actions.allocate import allocate
from scheduler_core.engine.actions.consolidate import consolidate
from scheduler_core.engine.actions.elastic import expand
from scheduler_core.engine.actions.faults import handle_faults
from scheduler_core.engine.actions.preempt import preempt
from scheduler_core.engine.actions.reclaim import reclaim
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import PoolIndex
from scheduler_core.engine.policies.determined_fairshare import schedule_fairshare_pool
from scheduler_core.engine.policies.determined_priority import schedule_priority_pool
from scheduler_core.engine.snapshot import POLICY_FAIRSHARE, POLICY_PRIORITY

Action = Callable[[Session], None]
"""An action over the whole session."""

PoolAction = Callable[[Session, PoolIndex], None]
"""An action over one pool."""

QUOTA_POLICY: tuple[str, ...] = ("allocate", "consolidate", "reclaim", "preempt", "expand")
"""KAI-Scheduler / Run:ai: allocate, consolidate, reclaim, preempt, then grow elastic
workloads; each acts on the pools under policy quota."""

DETERMINED_FAIRSHARE_POLICY: tuple[PoolAction, ...] = (schedule_fairshare_pool,)
"""Determined's fair-share scheduler, on one pool."""

DETERMINED_PRIORITY_POLICY: tuple[PoolAction, ...] = (schedule_priority_pool,)
"""Determined's priority scheduler, on one pool."""

DETERMINED_POLICIES: dict[str, tuple[PoolAction, ...]] = {
    POLICY_FAIRSHARE: DETERMINED_FAIRSHARE_POLICY,
    POLICY_PRIORITY: DETERMINED_PRIORITY_POLICY,
}
"""The pool-level policies by PoolConfig.policy."""


def determined_pools(session: Session) -> None:
    """Schedule the pools under Determined's policies, pool by pool in snapshot order."""
    for pool in session.pools.values():
        for action in DETERMINED_POLICIES.get(pool.config.policy, ()):
            action(session, pool)


ACTIONS: dict[str, Action] = {
    "faults": handle_faults,
    "allocate": allocate,
    "determined": determined_pools,
    "consolidate": consolidate,
    "reclaim": reclaim,
    "preempt": preempt,
    "expand": expand,
}
"""Every action by name."""

DEFAULT_ACTIONS: tuple[str, ...] = ("faults", QUOTA_POLICY[0], "determined", *QUOTA_POLICY[1:])
"""The order of a cycle: faults, then the quota policy with the Determined pools
scheduled right after its allocation (before anything is consolidated or evicted)."""
