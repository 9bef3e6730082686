"""Expand: running elastic workloads grow one pod at a time into free capacity, the
best queue (fairshare order) first. Shrinking is part of reclaim and preempt, which
take pods from elastic workloads before they evict anything whole."""

from __future__ import annotations

import heapq

from scheduler_core.engine.actions.common import next_pod, quota_pools, try_start
from scheduler_core.engine.framework.session import Session
from scheduler_core.engine.framework.state import WorkloadState


def expand(session: Session) -> None:
    """Grow elastic workloads while pods fit, limits and quotas allow."""
    for pool in quota_pools(session):
        growing = [
            w
            for w in session.running_by_pool[pool.name].values()
            if w.missing_pods() > 0 and not w.evicted and len(w.pods) >= len(w.initial_pods)
        ]
        if not growing:
            continue
        heap: list[tuple[tuple[object, ...], tuple[float, ...], int, WorkloadState]] = []
        for i, w in enumerate(growing):
            one = next_pod(w)
            assert one is not None
            extra = list(w.request_of(one))
            heap.append((session.queue_key(w, pool.name, extra), session.job_key(w), i, w))
        heapq.heapify(heap)
        seq = len(heap)
        while heap:
            _, _, _, w = heapq.heappop(heap)
            one = next_pod(w)
            if one is None:
                continue
            extra = list(w.request_of(one))
            fresh = session.queue_key(w, pool.name, extra)
            if heap and (fresh, session.job_key(w)) > heap[0][:2]:
                # other queues' keys only get worse as pods are added: re-check lazily
                seq += 1
                heapq.heappush(heap, (fresh, session.job_key(w), seq, w))
                continue
            if session.admission_problem(w, pool.name, extra) is not None:
                continue
            stmt = session.statement()
            if not try_start(session, stmt, w, pool, one):
                stmt.discard()
                continue
            stmt.commit()
            nxt = next_pod(w)
            if nxt is not None:
                seq += 1
                extra = list(w.request_of(nxt))
                heapq.heappush(
                    heap, (session.queue_key(w, pool.name, extra), session.job_key(w), seq, w)
                )
