"""The min-runtime plugin: a started preemptible workload is safe from eviction for
the pool's min_guaranteed_runtime, and for good once it has been preempted the pool's
max_preemptions_per_workload times (elastic ones may still shrink to their minimum)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from scheduler_core.engine.framework.plugin import Plugin, register

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState


def preempted_enough(session: Session, w: WorkloadState) -> bool:
    """Has `w` been preempted as often as its pool allows (max_preemptions_per_workload)?"""
    if w.pool is None:
        return False
    most = session.pools[w.pool].config.max_preemptions_per_workload
    return most is not None and w.spec.preemptions >= most


@register
class MinRuntimePlugin(Plugin):
    """Protects a workload until started_at + min_guaranteed_runtime of its pool, and
    until it ends (math.inf) once preempted_enough."""

    name = "minruntime"

    def protected_until(self, session: Session, w: WorkloadState) -> float | None:
        if preempted_enough(session, w):
            return math.inf  # also a run started in this very cycle
        if w.pool is None or w.spec.started_at is None:
            return None
        runtime = session.pools[w.pool].config.min_guaranteed_runtime
        until = w.spec.started_at + runtime
        if runtime > 0 and session.now < until:
            return until
        return None
