"""Reads. Views, viewsets, consumers and tasks get their data here, filtered by the one
access rule, in a constant number of queries."""

from scheduler_core.selectors.cluster import cluster_overview, pool_summaries
from scheduler_core.selectors.queues import queue_overview
from scheduler_core.selectors.workloads import workload_list, workloads_with_placements

__all__ = [
    "cluster_overview",
    "pool_summaries",
    "queue_overview",
    "workload_list",
    "workloads_with_placements",
]
