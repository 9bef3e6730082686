"""Faults: workloads with a pod on a down node are evicted (reason fault); once their
restarts exceed the backoff limit they fail instead of re-queueing."""

from __future__ import annotations

from scheduler_core.engine.decisions import EVICT_FAULT
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.snapshot import NODE_DOWN


def handle_faults(session: Session) -> None:
    """Evict (or fail) every workload that runs on a down node."""
    down = {name for name, n in session.nodes.items() if n.state == NODE_DOWN}
    if not down:
        return
    for w in session.workloads.values():
        bad = sorted({p.node for p in w.pods if p.node in down})
        if not bad:
            continue
        stmt = session.statement()
        stmt.evict(w, EVICT_FAULT, f"node {', '.join(bad)} is down", None)
        restarts = w.spec.restarts + 1
        limit = w.spec.backoff_limit
        if limit is not None and restarts > limit:
            stmt.fail(
                w,
                f"evicted by a fault ({', '.join(bad)} down) after {restarts - 1} restarts; "
                f"its backoff limit is {limit}",
            )
        stmt.commit()
