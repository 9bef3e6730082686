"""Queue: per pool, the ordered pending workloads with position and why they wait."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from console.views.common import page
from scheduler_core import selectors


def _ordered(pending):
    """Queue order: the scheduler's position first, then submission time."""
    return sorted(
        pending,
        key=lambda w: (w.queue_position is None, w.queue_position or 0, w.submitted_at, w.pk),
    )


def _context(request) -> dict:
    queues = selectors.queue_overview(user=request.user)
    for q in queues:
        q.pending = _ordered(q.pending)
    return {"queues": queues}


@login_required
def queue(request):
    return page(request, "console/queue.html", "queue", _context(request))


@login_required
def queue_live(request):
    return render(request, "console/partials/_queue_live.html", _context(request))
