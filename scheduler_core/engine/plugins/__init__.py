"""Plugins: small named pieces of policy that the session consults.

A plugin overrides some hooks of `Plugin` and registers itself by name (`@register`);
a session enables plugins by name (`ClusterSnapshot.plugins`, default DEFAULT_PLUGINS),
opens each (`on_session_open`) and asks them in order: the first plugin that answers a
hook decides (job order, victim order, gang, protection from eviction). The queue hooks
(queue order, fairshare, quota, admission, reclaimability: see
framework/queue_hooks.py) come from one plugin, the first that provides them; the
proportion plugin is always enabled, since every result reports each queue's deserved
quota and fairshare.

Actions never call plugins: they call the session's hooks.
"""

from __future__ import annotations

# Importing the built-in plugins registers them (framework.plugin.register).
from scheduler_core.engine.plugins import gang, minruntime, priority, proportion

__all__ = ["gang", "minruntime", "priority", "proportion"]
