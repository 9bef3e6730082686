"""The min-runtime plugin: a started preemptible workload is safe from eviction for
the pool's min_guaranteed_runtime (elastic ones may still shrink to their minimum)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.framework.plugin import Plugin, register

if TYPE_CHECKING:
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState


@register
class MinRuntimePlugin(Plugin):
    """Protects a workload until started_at + min_guaranteed_runtime of its pool."""

    name = "minruntime"

    def protected_until(self, session: Session, w: WorkloadState) -> float | None:
        if w.pool is None or w.spec.started_at is None:
            return None
        runtime = session.pools[w.pool].config.min_guaranteed_runtime
        until = w.spec.started_at + runtime
        if runtime > 0 and session.now < until:
            return until
        return None
