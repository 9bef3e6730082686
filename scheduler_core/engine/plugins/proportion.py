"""The proportion plugin: hierarchical fairshare and queue order (see fairshare.py and
Session.queue_key). Registered so a snapshot can name it; the figures themselves are
computed by the session every cycle."""

from __future__ import annotations

from scheduler_core.engine.plugins import Plugin, register


@register
class ProportionPlugin(Plugin):
    """Queues are ordered by fairshare, quota, rank, starvation and age."""

    name = "proportion"
