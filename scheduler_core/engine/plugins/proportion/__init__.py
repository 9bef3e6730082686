"""The proportion plugin: hierarchical quotas, fairshare division and queue order.

- division.py: the division of a resource among claims (Run:ai/KAI), and time-based
  usage decay;
- figures.py: every queue's deserved quota, limit, requested and fairshare per pool;
- plugin.py: the plugin, which answers the session's queue hooks from those figures.
"""

from scheduler_core.engine.plugins.proportion.plugin import ProportionPlugin

__all__ = ["ProportionPlugin"]
