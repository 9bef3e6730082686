"""Faults: workloads with a pod on a down node are evicted (reason fault); once their
restarts use up the backoff limit they fail instead of re-queueing (the rule of
engine.transitions, which node faults and executors' reports follow too)."""

from __future__ import annotations

from scheduler_core.engine.decisions import EVICT_FAULT
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.snapshot import NODE_DOWN
from scheduler_core.engine.transitions import Cause, exhausted_reason, requeue_outcome


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
        why = f"node {', '.join(bad)} is down"
        stmt.evict(w, EVICT_FAULT, why, None)
        outcome = requeue_outcome(
            cause=Cause.FAULT, restarts=w.spec.restarts, preemptions=0,
            backoff_limit=w.spec.backoff_limit,
        )  # fmt: skip
        if not outcome.requeued:
            stmt.fail(
                w,
                exhausted_reason(
                    f"evicted by a fault ({why})", restarts=w.spec.restarts,
                    limit=w.spec.backoff_limit,
                ),
            )  # fmt: skip
        stmt.commit()
